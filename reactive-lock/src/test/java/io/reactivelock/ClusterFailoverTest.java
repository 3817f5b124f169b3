package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.reactivelock.internal.LockKeys;
import io.reactivelock.support.RedisCluster;
import io.reactivelock.support.RedisServer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * Redis replicates asynchronously: a master can fail before its replica has the lock key, and the promoted
 * replica then grants the same lock again. The first holder must learn it from its next renewal, never
 * carry on as if it still held the lock.
 */
class ClusterFailoverTest {

    private static final Duration TTL = Duration.ofSeconds(10);
    private static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void aHolderWhoseLockKeyDiedWithItsMasterLosesTheLockAtTheNextRenewal() throws Exception {
        try (RedisCluster cluster = RedisCluster.start(3, 1)) {
            RedisServer master = cluster.masters().get(0);
            RedisServer replica = cluster.replicas().get(0);
            String name = IntStream.range(0, 1000).mapToObj(i -> "order-" + i)
                    .filter(candidate -> cluster.owner(cluster.slot(new LockKeys("lock").lockKey(candidate))) == master)
                    .findFirst().orElseThrow();
            RedisClusterClient client = RedisClusterClient.create(cluster.uris());
            client.setOptions(ClusterClientOptions.builder()
                    .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                            // every adaptive trigger (MOVED, ASK, reconnects...) is on by default since Lettuce 7
                            .enablePeriodicRefresh(Duration.ofMillis(500))
                            .build())
                    .build());
            try (ReactiveRedisLock lock = ReactiveRedisLock.create(client, LockOptions.builder()
                    .renewalInterval(Duration.ofMillis(200))
                    .commandTimeout(Duration.ofMillis(500))
                    .acquireTimeout(WAIT)
                    .build())) {
                cluster.detach(replica);
                AtomicReference<LockLease> firstLease = new AtomicReference<>();
                CountDownLatch bodyCancelled = new CountDownLatch(1);
                CompletableFuture<Object> first = lock.withLock(name, TTL, lease -> {
                    firstLease.set(lease);
                    return Mono.never().doOnCancel(bodyCancelled::countDown);
                }).toFuture();
                await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> firstLease.get() != null);

                master.kill();
                cluster.takeOver(replica);
                assertThat(replica.call("DBSIZE")).as("keys on the promoted replica").isEqualTo("0");

                // The known limit: the promoted replica grants the lock again while the first holder runs.
                LockLease second = lock.withLock(name, TTL, Mono::just).block(WAIT);
                assertThat(second.fencingToken()).as("fencing token after the failover")
                        .isGreaterThan(firstLease.get().fencingToken());

                assertThat(first).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
                        .havingCause()
                        .isInstanceOf(LockLostException.class)
                        .withMessageContaining("it expired or another holder took it");
                assertThat(bodyCancelled.getCount()).as("body still running").isZero();
            } finally {
                client.shutdown();
            }
        }
    }
}
