package io.reactivelock.faults;

import static io.reactivelock.faults.Faults.report;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * Fault 8: with {@code maxmemory} and an evicting policy ({@code allkeys-lru}), filling memory
 * evicts the lock key; the next renewal finds it gone and the body is told with
 * {@link LockLostException}. This is why the README asks for {@code noeviction}.
 */
class EvictionTest {

    private static final Duration RENEWAL = Duration.ofMillis(500);
    /** For a round trip and a 2-core machine shared with other builds. */
    private static final Duration SLACK = Duration.ofSeconds(1);
    /** About 700 writes evict the lock key (4 MB of 10 kB values); 30 times that means it never will. */
    private static final int MAX_WRITES = 20_000;

    @Test
    void anEvictedLockKeyEndsTheBodyWithLockLostException() throws Exception {
        try (RedisServer redis = RedisServer.start("--maxmemory", "4mb", "--maxmemory-policy", "allkeys-lru")) {
            ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                    .renewalInterval(RENEWAL).build());
            RedisClient client = RedisClient.create(redis.uri());
            try (StatefulRedisConnection<String, String> connection = client.connect(StringCodec.UTF8)) {
                RedisCommands<String, String> filler = connection.sync();
                AtomicLong failedAt = new AtomicLong();
                CompletableFuture<Object> holder = lock.withLock("a", Duration.ofSeconds(30), Mono.never())
                        .doOnError(e -> failedAt.set(System.nanoTime())).toFuture();
                await().pollInterval(Duration.ofMillis(2)).until(() -> filler.exists("lock:{a}") == 1);

                String value = "x".repeat(10_000);
                int written = 0;
                while (filler.exists("lock:{a}") == 1) {
                    assertThat(written).as("writes of 10 kB without evicting the lock key").isLessThan(MAX_WRITES);
                    filler.set("fill:" + written++, value);
                }
                long evictedAt = System.nanoTime();

                Throwable error = RedisRestartTest.failure(holder);
                assertThat(error).isInstanceOf(LockLostException.class);
                assertThat(Long.parseLong(filler.info("stats").lines()
                        .filter(line -> line.startsWith("evicted_keys:")).findFirst().orElseThrow()
                        .substring("evicted_keys:".length()))).isPositive();
                assertThat(Duration.ofNanos(failedAt.get() - evictedAt)).as("told at the next renewal")
                        .isLessThanOrEqualTo(RENEWAL.plus(SLACK));
                report("fault 8 eviction", "lock key evicted after " + written + " writes of 10 kB; LockLostException "
                        + Duration.ofNanos(failedAt.get() - evictedAt).toMillis() + " ms later (renewal every 500 ms)");
            } finally {
                lock.close();
                client.shutdown();
            }
        }
    }
}
