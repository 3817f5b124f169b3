package io.reactivelock.faults;

import static io.reactivelock.faults.Faults.exists;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.redis.RedisInternals;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * Fault 7: {@code SCRIPT FLUSH} while a lock is held and another caller waits. The renewal, the
 * release (plain or fair hand-off) and the waiter's acquire all fall back from {@code EVALSHA} to
 * {@code EVAL}. ({@code ReactiveRedisLockTest.scriptsAreReloadedAfterScriptFlush} covers a flush
 * between two locks.)
 */
@WithRedis
class ScriptFlushTest {

    private static final Duration TTL = Duration.ofSeconds(30);

    @ParameterizedTest(name = "fair={0}")
    @ValueSource(booleans = {false, true})
    void aScriptFlushWhileHeldIsSurvivedByRenewalReleaseAndTheWaiter(boolean fair, RedisServer redis) throws Exception {
        // Renewals every 100 ms of a 30 s lease: one follows the flush at once, and a stall cannot cost the lease.
        ReactiveRedisLock client = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                .renewalInterval(Duration.ofMillis(100)).build());
        try {
            ReactiveLock lock = fair ? client.fair() : client;
            Sinks.Empty<Void> finish = Sinks.empty();
            CompletableFuture<String> holder = lock.withLock("a", TTL,
                    finish.asMono().thenReturn("holder")).toFuture();
            await().pollInterval(Duration.ofMillis(2)).until(() -> exists(redis, "lock:{a}"));
            CompletableFuture<String> waiter = lock.withLock("a", TTL, Mono.just("waiter")).toFuture();

            redis.call("SCRIPT", "FLUSH");
            // A renewal after the flush reloaded the script: the holder is still inside and still holds.
            await().pollInterval(Duration.ofMillis(5)).until(() ->
                    redis.call("SCRIPT", "EXISTS", RedisInternals.RENEW.sha()).equals("1"));
            assertThat(holder).isNotDone();
            finish.tryEmitEmpty();

            assertThat(holder.get(10, TimeUnit.SECONDS)).isEqualTo("holder");
            assertThat(waiter.get(10, TimeUnit.SECONDS)).isEqualTo("waiter");
            await().pollInterval(Duration.ofMillis(5)).atMost(Duration.ofSeconds(5)).until(() -> !exists(redis, "lock:{a}"));
        } finally {
            client.close();
        }
    }
}
