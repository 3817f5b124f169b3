package io.reactivelock.faults;

import static io.reactivelock.faults.Faults.TOLD_LATE;
import static io.reactivelock.faults.Faults.exists;
import static io.reactivelock.faults.Faults.report;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.FencedResource;
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
 * Fault 1: Redis killed while a lock is held, and restarted without persistence (empty), or left
 * down. The holder's body is told with {@link LockLostException} at the latest when its lease runs
 * out, the release adds no error of its own, and the lock works again after the restart. Fencing
 * tokens after the restart come from the server clock: below the last one if the lost fencing
 * record was ahead of that clock.
 */
@WithRedis
class RedisRestartTest {

    /** Long next to a restart and a reconnect (a few hundred ms), so that the restart is found by a renewal. */
    private static final Duration TTL = Duration.ofSeconds(3);
    /** An hour, in the microseconds of a fencing token. */
    private static final long HOUR_MICROS = TimeUnit.HOURS.toMicros(1);

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
    void aRestartThatLosesTheLockEndsTheBodyWithLockLostExceptionBeforeTheLeaseRunsOut() throws Exception {
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
        assertThat(error).isInstanceOf(LockLostException.class).hasMessageContaining("'a'")
                .as("found by a renewal on the restarted server").hasMessageContaining("it expired or another holder took it");
        assertThat(error.getSuppressed()).as("the release adds nothing to the error").isEmpty();
        // Found by the first renewal after the reconnect (a renewal interval into a 3 s lease), so
        // the caller is told before the lease runs out, as the README says, not at its end.
        assertThat(failedAt.get()).as("when the caller was told, against the end of the lease")
                .isLessThan(held.get().validUntilNanos());
        report("fault 1 restart", "kill+restart -> LockLostException after "
                + Duration.ofNanos(failedAt.get() - faultAt).toMillis() + " ms, "
                + Duration.ofNanos(held.get().validUntilNanos() - failedAt.get()).toMillis() + " ms before the lease ran out (TTL "
                + TTL.toMillis() + " ms)");

        LockLease after = lock.withLock("a", TTL, Mono::just).block(Duration.ofSeconds(10));
        assertThat(after).isNotNull();
        assertThat(exists(redis, "lock:{a}")).isFalse();
    }

    @Test
    void redisDownLongerThanTheLeaseEndsTheBodyWhenTheLeaseRunsOut() throws Exception {
        AtomicReference<LockLease> held = new AtomicReference<>();
        AtomicLong failedAt = new AtomicLong();
        CompletableFuture<Object> holder = lock.withLock("a", TTL, lease -> {
                    held.set(lease);
                    return Mono.never();
                })
                .doOnError(e -> failedAt.set(System.nanoTime()))
                .toFuture();
        await().pollInterval(Duration.ofMillis(5)).until(() -> exists(redis, "lock:{a}"));

        redis.kill();
        Throwable error = failure(holder);
        redis.restart();

        assertThat(error).isInstanceOf(LockLostException.class)
                .hasMessageContaining("could not renew it before the lease ran out");
        assertThat(error.getSuppressed()).as("a lost lock's release adds no error of its own").isEmpty();
        long leaseEnd = held.get().validUntilNanos();
        assertThat(failedAt.get()).as("when the caller was told: at the end of the lease, not before")
                .isBetween(leaseEnd, leaseEnd + TOLD_LATE.toNanos());
        report("fault 1 down", "kill (no restart) -> LockLostException " + Duration.ofNanos(failedAt.get() - leaseEnd).toMillis()
                + " ms after the lease ran out (TTL " + TTL.toMillis() + " ms); cause " + error.getCause());
        assertThat(lock.withLock("a", TTL, Mono.just("again")).block(Duration.ofSeconds(10))).isEqualTo("again");
    }

    @Test
    void whileTheFencingRecordLivesTokensRiseAboveItWhateverTheClockAndARestartThatLosesItLetsThemGoBackwards() {
        // As if the server's clock had run an hour ahead when it issued the last token, and was then set right.
        long ahead = serverMicros() + HOUR_MICROS;
        redis.call("SET", "lock:{a}:fence", Long.toString(ahead));
        long before = lock.withLock("a", TTL, lease -> Mono.just(lease.fencingToken())).block(Duration.ofSeconds(10));
        assertThat(before).as("token while the record lives").isGreaterThan(ahead);

        redis.kill();
        redis.restart(); // empty: the record is gone
        long after = lock.withLock("a", TTL, lease -> Mono.just(lease.fencingToken())).block(Duration.ofSeconds(10));

        assertThat(after).as("token after a restart that lost a record ahead of the clock").isLessThan(before);
        FencedResource resource = FencedResource.fenced();
        resource.write(before, "holder before the restart");
        assertThat(resource.write(after, "holder after the restart"))
                .as("a fenced resource refuses the new holder until the clock passes the lost token").isFalse();
    }

    /** The server's clock in microseconds, as a fencing token is made. */
    private long serverMicros() {
        return Long.parseLong(redis.call("EVAL", "local t = redis.call('TIME') return t[1] * 1000000 + t[2]", "0"));
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
