package io.reactivelock.faults;

import static io.reactivelock.faults.Faults.TOLD_LATE;
import static io.reactivelock.faults.Faults.exists;
import static io.reactivelock.faults.Faults.report;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.MultiLockLease;
import io.reactivelock.ReactiveMultiLock;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * Faults 1 and 7 for the multi-lock, as {@code RedisRestartTest} and {@code ScriptFlushTest} show
 * them for the lock: Redis restarted empty or left down while names are held, and
 * {@code SCRIPT FLUSH} while they are held and another caller waits.
 */
@WithRedis
class MultiLockFaultsTest {

    /** Long next to a restart and a reconnect (a few hundred ms), so that the restart is found by a renewal. */
    private static final Duration TTL = Duration.ofSeconds(3);
    private static final List<String> NAMES = List.of("a", "b", "c");

    private RedisServer redis;
    private ReactiveRedisLock client;
    private ReactiveMultiLock lock;

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
        client = ReactiveRedisLock.create(redis.uri(), LockOptions.builder().acquireTimeout(Duration.ofSeconds(10)).build());
        lock = client.multiLock();
    }

    @AfterEach
    void tearDown() {
        client.close();
    }

    private boolean allHeld() {
        return NAMES.stream().allMatch(name -> exists(redis, "lock:{" + name + "}"));
    }

    /** Holds {@link #NAMES} until the lease is lost; the lease goes to {@code held}, the moment of the failure to {@code failedAt}. */
    private CompletableFuture<Object> holdUntilLost(AtomicReference<MultiLockLease> held, AtomicLong failedAt) {
        CompletableFuture<Object> holder = lock.withLocks(NAMES, TTL, lease -> {
                    held.set(lease);
                    return Mono.never();
                })
                .doOnError(e -> failedAt.set(System.nanoTime()))
                .toFuture();
        await().pollInterval(Duration.ofMillis(5)).until(this::allHeld);
        return holder;
    }

    @Test
    void aRestartThatLosesTheNamesEndsTheBodyWithLockLostExceptionBeforeTheLeaseRunsOut() throws Exception {
        AtomicReference<MultiLockLease> held = new AtomicReference<>();
        AtomicLong failedAt = new AtomicLong();
        CompletableFuture<Object> holder = holdUntilLost(held, failedAt);

        long faultAt = System.nanoTime();
        redis.kill();
        redis.restart();

        Throwable error = RedisRestartTest.failure(holder);
        assertThat(error).isInstanceOf(LockLostException.class).hasMessageStartingWith("Lost lock 'a': ")
                .as("found by a renewal on the restarted server").hasMessageContaining("it expired or another holder took it");
        assertThat(error.getSuppressed()).as("the release adds nothing to the error").isEmpty();
        assertThat(failedAt.get()).as("when the caller was told, against the end of the lease")
                .isLessThanOrEqualTo(held.get().validUntilNanos() + TOLD_LATE.toNanos());
        report("fault 1 restart, multi-lock", "kill+restart -> LockLostException after "
                + Duration.ofNanos(failedAt.get() - faultAt).toMillis() + " ms, "
                + Duration.ofNanos(held.get().validUntilNanos() - failedAt.get()).toMillis() + " ms before the lease ran out");

        assertThat(lock.withLocks(NAMES, TTL, Mono.just("again")).block(Duration.ofSeconds(10))).isEqualTo("again");
        assertThat(NAMES).noneMatch(name -> exists(redis, "lock:{" + name + "}"));
    }

    @Test
    void redisDownLongerThanTheLeaseEndsTheBodyWhenTheLeaseRunsOut() throws Exception {
        AtomicReference<MultiLockLease> held = new AtomicReference<>();
        AtomicLong failedAt = new AtomicLong();
        CompletableFuture<Object> holder = holdUntilLost(held, failedAt);

        redis.kill();
        Throwable error = RedisRestartTest.failure(holder);
        redis.restart();

        assertThat(error).isInstanceOf(LockLostException.class).hasMessageContaining("could not renew it before the lease ran out");
        assertThat(error.getSuppressed()).as("a lost lock's release adds no error of its own").isEmpty();
        long leaseEnd = held.get().validUntilNanos();
        assertThat(failedAt.get()).as("when the caller was told: at the end of the lease, not before")
                .isBetween(leaseEnd, leaseEnd + TOLD_LATE.toNanos());
        assertThat(lock.withLocks(NAMES, TTL, Mono.just("again")).block(Duration.ofSeconds(10))).isEqualTo("again");
    }

    @Test
    void aScriptFlushWhileHeldIsSurvivedByRenewalReleaseAndTheWaiter() throws Exception {
        // Renewals every 100 ms of a 30 s lease: one follows the flush at once, and a stall cannot cost the lease.
        ReactiveRedisLock renewingClient = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                .renewalInterval(Duration.ofMillis(100)).build());
        try {
            ReactiveMultiLock renewing = renewingClient.multiLock();
            Sinks.Empty<Void> finish = Sinks.empty();
            AtomicReference<MultiLockLease> held = new AtomicReference<>();
            CompletableFuture<String> holder = renewing.withLocks(NAMES, Duration.ofSeconds(30), lease -> {
                held.set(lease);
                return finish.asMono().thenReturn("holder");
            }).toFuture();
            await().pollInterval(Duration.ofMillis(2)).until(this::allHeld);
            CompletableFuture<String> waiter = renewing.withLocks(List.of("c", "d"), Duration.ofSeconds(30), Mono.just("waiter"))
                    .toFuture();

            redis.call("SCRIPT", "FLUSH");
            long flushedAt = System.nanoTime();
            // A renewal sent after the flush extended the lease: the script was sent again by EVAL.
            await().pollInterval(Duration.ofMillis(5)).until(() -> held.get().validUntilNanos() - flushedAt > Duration.ofSeconds(30).toNanos());
            assertThat(holder).isNotDone();
            finish.tryEmitEmpty();

            assertThat(holder.get(10, TimeUnit.SECONDS)).isEqualTo("holder");
            assertThat(waiter.get(10, TimeUnit.SECONDS)).isEqualTo("waiter");
            await().pollInterval(Duration.ofMillis(5)).atMost(Duration.ofSeconds(5))
                    .until(() -> List.of("a", "b", "c", "d").stream().noneMatch(name -> exists(redis, "lock:{" + name + "}")));
        } finally {
            renewingClient.close();
        }
    }
}
