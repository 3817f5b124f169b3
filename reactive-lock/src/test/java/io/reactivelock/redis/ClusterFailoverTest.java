package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockAcquisitionException.Reason;
import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.reactivelock.support.CommandStats;
import io.reactivelock.support.FencedResource;
import io.reactivelock.support.NeedsRedis;
import io.reactivelock.support.RedisCluster;
import io.reactivelock.support.RecordingListener;
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
 * replica then grants the same lock again. With replica acknowledgements (the default) a grant reaches
 * the body only once its master's replica has it, so the promoted replica still holds the lock; the
 * grants and their {@code WAIT}s go to each master's own connection ({@link ClusterAcks}). Without them
 * (the known limit, shown here with a replica cut off before the grant) the first holder must learn it from
 * its next renewal, never later than its lease, and the fencing record can be lost the same way: tokens
 * from the new master then follow its clock, and go backwards if the lost record was ahead of it.
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
    /** A name on a master without a replica. */
    private String elsewhere;
    private RedisClusterClient client;
    /** Without replica acknowledgements. */
    private ReactiveRedisLock lock;

    @BeforeEach
    void setUp() {
        cluster = RedisCluster.start(3, 1);
        master = cluster.masters().get(0);
        replica = cluster.replicas().get(0);
        name = onMaster(0);
        elsewhere = onMaster(1);
        client = RedisClusterClient.create(cluster.uris());
        client.setOptions(ClusterClientOptions.builder()
                .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                        // every adaptive trigger (MOVED, ASK, reconnects...) is on by default since Lettuce 7
                        .enablePeriodicRefresh(Duration.ofMillis(500))
                        .build())
                .build());
        lock = ReactiveRedisLock.create(client, options().replicaAcknowledgement(0).build());
    }

    private LockOptions.Builder options() {
        return LockOptions.builder()
                .renewalInterval(Duration.ofMillis(200))
                .commandTimeout(Duration.ofMillis(500))
                .acquireTimeout(WAIT);
    }

    private String onMaster(int index) {
        return IntStream.range(0, 1000).mapToObj(i -> "order-" + i)
                .filter(candidate -> cluster.owner(cluster.slot(new LockKeys("lock").lockKey(candidate))) == cluster.masters().get(index))
                .findFirst().orElseThrow();
    }

    @Test
    void withAcknowledgementsALockSurvivesItsMasterKilledAndItsReplicaPromotedAndIsRenewedThere() {
        RecordingListener events = new RecordingListener();
        try (ReactiveRedisLock acknowledged = ReactiveRedisLock.create(client, options().listener(events).build())) {
            AtomicReference<LockLease> held = new AtomicReference<>();
            CompletableFuture<Object> first = acknowledged.withLock(name, TTL, lease -> {
                held.set(lease);
                return Mono.never();
            }).toFuture();
            await().atMost(WAIT).pollInterval(Duration.ofMillis(5)).until(() -> held.get() != null);
            assertThat(CommandStats.calls(master, "wait")).as("WAITs on the lock's master").isPositive();

            master.kill();
            cluster.takeOver(replica);
            assertThat(replica.call("GET", new LockKeys("lock").lockKey(name))).as("the lock key on the promoted replica")
                    .isEqualTo(held.get().token());
            assertThat(refusalAfterTheFailover()).as("another acquisition after the failover").isEqualTo(Reason.BUSY);
            long renewed = events.list.stream().filter(("renewed " + name)::equals).count();
            await("renewals on the promoted master").atMost(WAIT)
                    .until(() -> events.list.stream().filter(("renewed " + name)::equals).count() >= renewed + 2);
            assertThat(first).as("the first holder's body").isNotDone();
            assertThat(events.lost).as("leases lost").isEmpty();
        }
    }

    @Test
    void withAcknowledgementsAMasterWithoutReplicasWaitsForOneThatAttachesLater() {
        RedisServer lonely = cluster.owner(cluster.slot(new LockKeys("lock").lockKey(elsewhere)));
        try (ReactiveRedisLock acknowledged = ReactiveRedisLock.create(client, options().build())) {
            assertThat(acknowledged.withLock(elsewhere, TTL, Mono.just("granted")).block(WAIT)).isEqualTo("granted");
            assertThat(CommandStats.calls(lonely, "wait")).as("WAITs on a master without replicas").isZero();

            // As an old master does when it comes back after a failover: a replica attaches.
            try (RedisServer late = RedisServer.start("--cluster-enabled", "yes", "--cluster-node-timeout", "2000",
                    "--cluster-replica-no-failover", "yes")) {
                lonely.call("CLUSTER", "MEET", late.host(), Integer.toString(late.port()));
                await("the new node to join").atMost(WAIT).pollInterval(Duration.ofMillis(50)).ignoreExceptions()
                        .until(() -> late.call("CLUSTER", "REPLICATE", cluster.id(lonely)).equals("OK"));
                await("the new replica to sync").atMost(WAIT).pollInterval(Duration.ofMillis(50))
                        .until(() -> lonely.info("replication", "connected_slaves").equals("1"));

                assertThat(acknowledged.withLock(elsewhere, TTL, Mono.just("granted")).block(WAIT)).isEqualTo("granted");
                assertThat(CommandStats.calls(lonely, "wait")).as("WAITs on that master once a replica attached").isPositive();
            }
        }
    }

    @Test
    void durableGrantsAreRefusedAtCreateWhenAMasterCannotMakeThem() {
        // The masters run without an append-only file (and before Redis 7.2 without WAITAOF).
        assertThatThrownBy(() -> ReactiveRedisLock.create(client, options().durableGrants(true).build()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("durable grants (LockOptions.durableGrants(true)) cannot be made: ");
    }

    /**
     * The reason a one-try acquisition of {@link #name} is refused, once the client's view of the
     * Cluster has the promoted replica (until then it may find no master for the slot); fails if one
     * is granted.
     */
    private Reason refusalAfterTheFailover() {
        AtomicReference<Reason> refused = new AtomicReference<>();
        await("an answer from the slot's new master").atMost(WAIT).until(() -> {
            try {
                lock.withAcquireTimeout(Duration.ZERO).withLock(name, TTL, Mono.just("granted")).block(WAIT);
                throw new AssertionError("granted while the first holder still held it");
            } catch (LockAcquisitionException e) {
                refused.set(e.reason());
                return e.reason() != Reason.REDIS_UNAVAILABLE;
            }
        });
        return refused.get();
    }

    @Test
    void withAcknowledgementsAGrantItsMastersReplicaCannotAcknowledgeEndsNotReplicatedAndLeavesNoLock() {
        try (ReactiveRedisLock acknowledged = ReactiveRedisLock.create(client, options()
                .replicaAckTimeout(Duration.ofMillis(100)).acquireTimeout(Duration.ofSeconds(2)).build())) {
            cluster.detach(replica); // after the client saw the replica: it waits for it
            assertThat(acknowledged.withLock(elsewhere, TTL, Mono.just("granted")).block(WAIT))
                    .as("a name on a master without replicas, meanwhile").isEqualTo("granted");
            assertThatThrownBy(() -> acknowledged.withLock(name, TTL, Mono.just("granted")).block(WAIT))
                    .isInstanceOfSatisfying(LockAcquisitionException.class, e -> {
                        assertThat(e.reason()).isEqualTo(Reason.NOT_REPLICATED);
                        assertThat(e.getMessage()).contains("WAIT 1 100 answered 0");
                    });
            assertThat(master.call("EXISTS", new LockKeys("lock").lockKey(name))).as("the lock key on the master").isEqualTo("0");
        }
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
