package io.reactivelock.faults;

import static io.reactivelock.faults.Faults.TOLD_LATE;
import static io.reactivelock.faults.Faults.exists;
import static io.reactivelock.faults.Faults.millisSince;
import static io.reactivelock.faults.Faults.report;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * Fault 2: Redis frozen ({@code SIGSTOP}, or {@code CLIENT PAUSE}) longer than the TTL. Waiting
 * acquisitions give up with {@link LockAcquisitionException}; the attempts they left queued are
 * executed when Redis wakes up, and the grant that produces is released with our token: no orphan
 * lock, although its TTL (a minute) would keep it for long. A holder is told the lease ran out.
 */
@WithRedis
class RedisPauseTest {

    private static final Duration LONG_TTL = Duration.ofMinutes(1);

    private RedisServer redis;
    private ReactiveRedisLock lock;

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
        lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                .acquireTimeout(Duration.ofMillis(500)).commandTimeout(Duration.ofMillis(200)).build());
    }

    @AfterEach
    void tearDown() {
        redis.resume();
        lock.close();
    }

    @Test
    void anAcquisitionDuringSigstopTimesOutAndTheGrantThatArrivesLaterIsReleased() throws Exception {
        redis.pause();
        long pausedAt = System.nanoTime();
        Throwable error = RedisRestartTest.failure(lock.withLock("a", LONG_TTL, Mono.just("x")).toFuture());
        long toError = millisSince(pausedAt);
        redis.resume();

        assertThat(error).isInstanceOf(LockAcquisitionException.class);
        // The attempts were sent before the timeout: Redis runs them on waking and issues a fencing token ...
        await().pollInterval(Duration.ofMillis(5)).until(() -> exists(redis, "lock:{a}:fence"));
        long resumedAt = System.nanoTime();
        // ... and the late grant is released by its token, long before its one-minute TTL.
        await().pollInterval(Duration.ofMillis(5)).atMost(Duration.ofSeconds(5))
                .until(() -> !exists(redis, "lock:{a}"));
        report("fault 2 SIGSTOP", "LockAcquisitionException after " + toError + " ms (acquireTimeout 500 ms, "
                + ((LockAcquisitionException) error).attempts() + " attempts); late grant released "
                + millisSince(resumedAt) + " ms after the fence appeared; orphan locks: 0");
    }

    @Test
    void anAcquisitionDuringClientPauseTimesOutAndLeavesNoLock() throws Exception {
        redis.call("CLIENT", "PAUSE", "1500", "ALL");
        long pausedAt = System.nanoTime();
        Throwable error = RedisRestartTest.failure(lock.withLock("a", LONG_TTL, Mono.just("x")).toFuture());
        long toError = millisSince(pausedAt);

        assertThat(error).isInstanceOf(LockAcquisitionException.class);
        // This check waits for the pause to end, and then for the queued attempts to run and be undone.
        await().pollInterval(Duration.ofMillis(5)).until(() -> exists(redis, "lock:{a}:fence"));
        await().pollInterval(Duration.ofMillis(5)).atMost(Duration.ofSeconds(5))
                .until(() -> !exists(redis, "lock:{a}"));
        report("fault 2 CLIENT PAUSE", "LockAcquisitionException after " + toError + " ms; orphan locks: 0");
        assertThat(lock.withLock("a", LONG_TTL, Mono.just("after")).block(Duration.ofSeconds(5))).isEqualTo("after");
    }

    @Test
    void aHolderFrozenOutLongerThanItsTtlIsToldWhenTheLeaseRunsOut() throws Exception {
        Duration ttl = Duration.ofSeconds(2);
        AtomicReference<LockLease> held = new AtomicReference<>();
        AtomicLong bodyCancelledAt = new AtomicLong();
        AtomicLong failedAt = new AtomicLong();
        CompletableFuture<Object> holder = lock.withLock("a", ttl, lease -> {
                    held.set(lease);
                    return Mono.never().doOnCancel(() -> bodyCancelledAt.set(System.nanoTime()));
                })
                .doOnError(e -> failedAt.set(System.nanoTime()))
                .toFuture();
        await().pollInterval(Duration.ofMillis(5)).until(() -> exists(redis, "lock:{a}"));

        redis.pause();
        Throwable error = RedisRestartTest.failure(holder);
        redis.resume();

        assertThat(error).isInstanceOf(LockLostException.class).hasMessageContaining("could not renew it before the lease ran out");
        assertThat(error.getSuppressed()).as("a lost lock's release adds no error of its own").isEmpty();
        long leaseEnd = held.get().validUntilNanos();
        assertThat(bodyCancelledAt.get()).as("when the body was cancelled: at the end of the lease, not before")
                .isBetween(leaseEnd, leaseEnd + TOLD_LATE.toNanos());
        assertThat(failedAt.get()).as("when the caller was told").isBetween(bodyCancelledAt.get(), leaseEnd + TOLD_LATE.toNanos());
        report("fault 2 holder", "SIGSTOP -> body cancelled " + Duration.ofNanos(bodyCancelledAt.get() - leaseEnd).toMillis()
                + " ms after the lease ran out, LockLostException to the caller "
                + Duration.ofNanos(failedAt.get() - leaseEnd).toMillis() + " ms after (TTL " + ttl.toMillis() + " ms)");
        await().pollInterval(Duration.ofMillis(5)).atMost(Duration.ofSeconds(5)).until(() -> !exists(redis, "lock:{a}"));
    }
}
