package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.reactivelock.support.FencedResource;
import io.reactivelock.support.NeedsRedis;
import io.reactivelock.support.RedisCluster;
import io.reactivelock.support.RedisServer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * Redis replicates asynchronously: a master can fail before its replica has the lock key, and the promoted
 * replica then grants the same lock again. The first holder must learn it from its next renewal, never
 * later than its lease. The fencing record can be lost the same way: tokens from the new master then
 * follow its clock, and go backwards if the lost record was ahead of it.
 */
@NeedsRedis
class ClusterFailoverTest {

    private static final Duration TTL = Duration.ofSeconds(10);
    private static final Duration WAIT = Duration.ofSeconds(30);
    /**
     * How late after the end of its lease a holder may be told that it lost the lock: the timer that
     * ends the lease fires on a shared Reactor thread and the error reaches the caller through the
     * body's cancellation, on a 2-core machine shared with other builds.
     */
    private static final Duration TOLD_LATE = Duration.ofMillis(300);

    private RedisCluster cluster;
    private RedisServer master;
    private RedisServer replica;
    private String name;
    private RedisClusterClient client;
    private ReactiveRedisLock lock;

    @BeforeEach
    void setUp() {
        cluster = RedisCluster.start(3, 1);
        master = cluster.masters().get(0);
        replica = cluster.replicas().get(0);
        name = IntStream.range(0, 1000).mapToObj(i -> "order-" + i)
                .filter(candidate -> cluster.owner(cluster.slot(new LockKeys("lock").lockKey(candidate))) == master)
                .findFirst().orElseThrow();
        client = RedisClusterClient.create(cluster.uris());
        client.setOptions(ClusterClientOptions.builder()
                .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                        // every adaptive trigger (MOVED, ASK, reconnects...) is on by default since Lettuce 7
                        .enablePeriodicRefresh(Duration.ofMillis(500))
                        .build())
                .build());
        lock = ReactiveRedisLock.create(client, LockOptions.builder()
                .renewalInterval(Duration.ofMillis(200))
                .commandTimeout(Duration.ofMillis(500))
                .acquireTimeout(WAIT)
                .build());
    }

    @AfterEach
    void tearDown() {
        lock.close();
        client.shutdown();
        cluster.close();
    }

    @Test
    void aHolderWhoseLockKeyDiedWithItsMasterLosesTheLockAtTheNextRenewalBeforeItsLeaseRunsOut() throws Exception {
        cluster.detach(replica);
        AtomicReference<LockLease> firstLease = new AtomicReference<>();
        AtomicLong failedAt = new AtomicLong();
        CountDownLatch bodyCancelled = new CountDownLatch(1);
        CompletableFuture<Object> first = lock.withLock(name, TTL, lease -> {
                    firstLease.set(lease);
                    return Mono.never().doOnCancel(bodyCancelled::countDown);
                })
                .doOnError(e -> failedAt.set(System.nanoTime()))
                .toFuture();
        await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> firstLease.get() != null);

        master.kill();
        cluster.takeOver(replica);
        assertThat(replica.call("DBSIZE")).as("keys on the promoted replica").isEqualTo("0");

        // The known limit: the promoted replica grants the lock again while the first holder runs.
        LockLease second = lock.withLock(name, TTL, Mono::just).block(WAIT);
        assertThat(second.fencingToken()).as("fencing token after the failover (both servers read this host's clock)")
                .isGreaterThan(firstLease.get().fencingToken());

        assertThat(first).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
                .havingCause()
                .isInstanceOf(LockLostException.class)
                .withMessageContaining("it expired or another holder took it");
        assertThat(bodyCancelled.getCount()).as("body still running").isZero();
        assertThat(failedAt.get()).as("when the first holder was told, against the end of its lease")
                .isLessThanOrEqualTo(firstLease.get().validUntilNanos() + TOLD_LATE.toNanos());
    }

    @Test
    void fencingTokensGoBackwardsAfterAFailoverThatLostAFencingRecordAheadOfTheNewMastersClock() {
        cluster.detach(replica);
        // As if the old master's clock had run an hour ahead of the replica's.
        String fenceKey = LockKeys.fenceKey(new LockKeys("lock").lockKey(name));
        long serverMicros = Long.parseLong(master.call("EVAL", "local t = redis.call('TIME') return t[1] * 1000000 + t[2]", "0"));
        master.call("SET", fenceKey, Long.toString(serverMicros + TimeUnit.HOURS.toMicros(1)));
        AtomicReference<LockLease> firstLease = new AtomicReference<>();
        lock.withLock(name, TTL, lease -> {
            firstLease.set(lease);
            return Mono.never();
        }).subscribe(null, lost -> {});
        await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> firstLease.get() != null);

        master.kill();
        cluster.takeOver(replica);
        assertThat(replica.call("EXISTS", fenceKey)).as("fencing record on the promoted replica").isEqualTo("0");
        LockLease second = lock.withLock(name, TTL, Mono::just).block(WAIT);

        assertThat(second.fencingToken()).as("fencing token after the failover").isLessThan(firstLease.get().fencingToken());
        // What that does to a fenced resource: a write the first holder sent before it was told arrives
        // after the new holder's, and is accepted over it.
        FencedResource resource = FencedResource.fenced();
        assertThat(resource.write(second.fencingToken(), "new holder")).isTrue();
        assertThat(resource.write(firstLease.get().fencingToken(), "first holder")).as("the first holder's late write").isTrue();
        assertThat(resource.value()).isEqualTo("first holder");
    }
}
