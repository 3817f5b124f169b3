package io.reactivelock.faults;

import static io.reactivelock.faults.Faults.exists;
import static io.reactivelock.faults.Faults.millisSince;
import static io.reactivelock.faults.Faults.report;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * Fault 1: Redis killed while a lock is held, and restarted without persistence (empty). The
 * holder's body is told with {@link LockLostException}, the release adds no error of its own, and
 * the lock works again after the restart with a higher fencing token.
 */
@WithRedis
class RedisRestartTest {

    private static final Duration TTL = Duration.ofSeconds(1);

    private RedisServer redis;
    private ReactiveRedisLock lock;

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
        lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder().acquireTimeout(Duration.ofSeconds(10)).build());
    }

    @AfterEach
    void tearDown() {
        lock.close();
    }

    @Test
    void aRestartThatLosesTheLockEndsTheBodyWithLockLostExceptionAndTheLockWorksAfterwards() throws Exception {
        AtomicReference<LockLease> held = new AtomicReference<>();
        AtomicLong failedAt = new AtomicLong();
        CompletableFuture<Object> holder = lock.withLock("a", TTL, lease -> {
                    held.set(lease);
                    return Mono.never();
                })
                .doOnError(e -> failedAt.set(System.nanoTime()))
                .toFuture();
        await().pollInterval(Duration.ofMillis(5)).until(() -> exists(redis, "lock:{a}"));

        long faultAt = System.nanoTime();
        redis.kill();
        redis.restart();

        Throwable error = failure(holder);
        assertThat(error).isInstanceOf(LockLostException.class).hasMessageContaining("'a'");
        assertThat(error.getSuppressed()).as("the release adds nothing to the error").isEmpty();
        report("fault 1 restart", "kill+restart -> LockLostException after "
                + Duration.ofNanos(failedAt.get() - faultAt).toMillis() + " ms (TTL " + TTL.toMillis() + " ms); "
                + error.getMessage());

        LockLease after = lock.withLock("a", TTL, Mono::just).block(Duration.ofSeconds(10));
        assertThat(after).isNotNull();
        assertThat(after.fencingToken()).as("fencing tokens still rise across a restart without persistence")
                .isGreaterThan(held.get().fencingToken());
        assertThat(exists(redis, "lock:{a}")).isFalse();
    }

    @Test
    void redisDownLongerThanTheLeaseEndsTheBodyWhenTheLeaseRunsOut() throws Exception {
        CompletableFuture<Object> holder = lock.withLock("a", TTL, Mono.never()).toFuture();
        await().pollInterval(Duration.ofMillis(5)).until(() -> exists(redis, "lock:{a}"));

        long faultAt = System.nanoTime();
        redis.kill();
        Throwable error = failure(holder);
        long toError = millisSince(faultAt);
        redis.restart();

        assertThat(error).isInstanceOf(LockLostException.class)
                .hasMessageContaining("could not renew it before the lease ran out");
        assertThat(error.getSuppressed()).as("a lost lock's release adds no error of its own").isEmpty();
        report("fault 1 down", "kill (no restart) -> LockLostException after " + toError + " ms (TTL "
                + TTL.toMillis() + " ms); cause " + error.getCause());
        assertThat(lock.withLock("a", TTL, Mono.just("again")).block(Duration.ofSeconds(10))).isEqualTo("again");
    }

    static Throwable failure(CompletableFuture<?> future) throws Exception {
        try {
            future.get(10, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        }
        throw new AssertionError("expected a failure, got " + future.join());
    }
}
