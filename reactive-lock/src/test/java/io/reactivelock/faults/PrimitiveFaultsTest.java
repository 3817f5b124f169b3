package io.reactivelock.faults;

import static io.reactivelock.faults.Faults.TOLD_LATE;
import static io.reactivelock.faults.Faults.exists;
import static io.reactivelock.faults.Faults.millisSince;
import static io.reactivelock.faults.Faults.report;
import static io.reactivelock.faults.RedisRestartTest.failure;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.ReactiveSemaphore;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.redis.RedisInternals;
import io.reactivelock.support.CommandStats;
import io.reactivelock.support.FencedResource;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * Faults 1, 2 and 7 for the semaphore and the read-write lock, as {@link ScriptFlushTest},
 * {@link RedisRestartTest} and {@link RedisPauseTest} show them for the lock: a {@code SCRIPT FLUSH}
 * while held and waited for is survived by renewal, release and the waiter; Redis restarted empty
 * or down, or frozen past the lease, tells the holder {@link LockLostException} at the latest when
 * its lease runs out; an acquisition that timed out while Redis was frozen leaves nothing held
 * once Redis runs what it had queued. Each runs for a semaphore holder (capacity 1), a reader and
 * a writer.
 */
@WithRedis
class PrimitiveFaultsTest {

    /** Who holds the name {@code a}, and who conflicts with it. */
    enum Kind {
        SEMAPHORE("lock:{a}:permits", RedisInternals.LEASE_RENEW, "its permits expired"),
        READER("lock:{a}:rw:readers", RedisInternals.LEASE_RENEW, "its read lease expired or was taken"),
        WRITER("lock:{a}:rw:writer", RedisInternals.RENEW, "its write lease expired or was taken");

        final String key;
        final RedisInternals.Script renew;
        final String lostAtRenewal;

        Kind(String key, RedisInternals.Script renew, String lostAtRenewal) {
            this.key = key;
            this.renew = renew;
            this.lostAtRenewal = lostAtRenewal;
        }
    }

    private final RedisServer redis;
    private ReactiveRedisLock client;
    private ReactiveSemaphore semaphore;
    private ReactiveReadWriteLock readWrite;

    PrimitiveFaultsTest(RedisServer redis) {
        this.redis = redis;
    }

    @AfterEach
    void close() {
        redis.resume();
        if (client != null) {
            client.close();
        }
    }

    private void create(LockOptions options) {
        client = ReactiveRedisLock.create(redis.uri(), options);
        semaphore = client.semaphore(1);
        readWrite = client.readWriteLock();
    }

    /** Holds {@code a} as {@code kind}. */
    private <T> Mono<T> hold(Kind kind, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
        return switch (kind) {
            case SEMAPHORE -> semaphore.withPermits("a", 1, ttl, body);
            case READER -> readWrite.withReadLock("a", ttl, body);
            case WRITER -> readWrite.withWriteLock("a", ttl, body);
        };
    }

    /** Asks for {@code a} in a way {@code kind}'s holder keeps waiting: another permit, a writer, a reader. */
    private <T> Mono<T> conflicting(Kind kind, Duration ttl, Mono<T> body) {
        return switch (kind) {
            case SEMAPHORE -> semaphore.withPermits("a", 1, ttl, body);
            case READER -> readWrite.withWriteLock("a", ttl, body);
            case WRITER -> readWrite.withReadLock("a", ttl, body);
        };
    }

    // ---- Fault 7: SCRIPT FLUSH ----

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aScriptFlushWhileHeldIsSurvivedByRenewalReleaseAndTheWaiter(Kind kind) throws Exception {
        // Renewals every 100 ms of a 30 s lease: one follows the flush at once, and a stall cannot cost the lease.
        create(LockOptions.builder().renewalInterval(Duration.ofMillis(100)).build());
        Duration ttl = Duration.ofSeconds(30);
        Sinks.Empty<Void> finish = Sinks.empty();
        CompletableFuture<String> holder = hold(kind, ttl, lease -> finish.asMono().thenReturn("holder")).toFuture();
        await().pollInterval(Duration.ofMillis(2)).until(() -> exists(redis, kind.key));
        CompletableFuture<String> waiter = conflicting(kind, ttl, Mono.just("waiter")).toFuture();

        redis.call("SCRIPT", "FLUSH");
        await().pollInterval(Duration.ofMillis(5)).until(() -> redis.call("SCRIPT", "EXISTS", kind.renew.sha()).equals("1"));
        assertThat(holder).as("still inside after a renewal reloaded its script").isNotDone();
        assertThat(waiter).as("still waiting").isNotDone();
        finish.tryEmitEmpty();

        assertThat(holder.get(10, TimeUnit.SECONDS)).isEqualTo("holder");
        assertThat(waiter.get(10, TimeUnit.SECONDS)).isEqualTo("waiter");
        await().pollInterval(Duration.ofMillis(5)).atMost(Duration.ofSeconds(5))
                .until(() -> redis.callList("KEYS", "lock:*").stream().allMatch(k -> String.valueOf(k).endsWith(":fence")));
    }

    // ---- Fault 1: restart, down ----

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aRestartThatLosesTheHoldEndsTheBodyWithLockLostExceptionBeforeTheLeaseRunsOut(Kind kind) throws Exception {
        create(LockOptions.builder().acquireTimeout(Duration.ofSeconds(10)).build());
        Duration ttl = Duration.ofSeconds(3); // long next to a restart and a reconnect, so that a renewal finds it
        AtomicReference<LockLease> held = new AtomicReference<>();
        AtomicLong failedAt = new AtomicLong();
        CompletableFuture<Object> holder = hold(kind, ttl, lease -> {
                    held.set(lease);
                    return Mono.never();
                })
                .doOnError(e -> failedAt.set(System.nanoTime()))
                .toFuture();
        await().pollInterval(Duration.ofMillis(5)).until(() -> exists(redis, kind.key));

        long faultAt = System.nanoTime();
        redis.kill();
        redis.restart();

        Throwable error = failure(holder);
        assertThat(error).isInstanceOf(LockLostException.class).hasMessageContaining("'a'")
                .as("found by a renewal on the restarted server").hasMessageContaining(kind.lostAtRenewal);
        assertThat(error.getSuppressed()).as("the release adds nothing to the error").isEmpty();
        assertThat(failedAt.get()).as("when the caller was told, against the end of the lease")
                .isLessThanOrEqualTo(held.get().validUntilNanos() + TOLD_LATE.toNanos());
        report("fault 1 restart " + kind, "kill+restart -> LockLostException after " + millisSince(faultAt) + " ms (TTL "
                + ttl.toMillis() + " ms)");

        assertThat(hold(kind, ttl, lease -> Mono.just("again")).block(Duration.ofSeconds(10))).isEqualTo("again");
        assertThat(exists(redis, kind.key)).isFalse();
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void redisDownLongerThanTheLeaseEndsTheBodyWhenTheLeaseRunsOut(Kind kind) throws Exception {
        create(LockOptions.builder().acquireTimeout(Duration.ofSeconds(10)).build());
        Duration ttl = Duration.ofSeconds(3);
        AtomicReference<LockLease> held = new AtomicReference<>();
        AtomicLong failedAt = new AtomicLong();
        CompletableFuture<Object> holder = hold(kind, ttl, lease -> {
                    held.set(lease);
                    return Mono.never();
                })
                .doOnError(e -> failedAt.set(System.nanoTime()))
                .toFuture();
        await().pollInterval(Duration.ofMillis(5)).until(() -> exists(redis, kind.key));

        redis.kill();
        Throwable error = failure(holder);
        redis.restart();

        assertThat(error).isInstanceOf(LockLostException.class).hasMessageContaining("could not renew it before the lease ran out");
        assertThat(error.getSuppressed()).as("a lost hold's release adds no error of its own").isEmpty();
        long leaseEnd = held.get().validUntilNanos();
        assertThat(failedAt.get()).as("when the caller was told: at the end of the lease, not before")
                .isBetween(leaseEnd, leaseEnd + TOLD_LATE.toNanos());
        assertThat(hold(kind, ttl, lease -> Mono.just("again")).block(Duration.ofSeconds(10))).isEqualTo("again");
    }

    @Test
    void aRestartThatLosesTheWritersFencingRecordLetsTheirTokensGoBackwards() {
        create(LockOptions.defaults());
        Duration ttl = Duration.ofSeconds(3);
        // As if the server's clock had run an hour ahead when it issued the last writer's token.
        long ahead = Long.parseLong(redis.call("EVAL", "local t = redis.call('TIME') return t[1] * 1000000 + t[2]", "0"))
                + TimeUnit.HOURS.toMicros(1);
        redis.call("SET", "lock:{a}:rw:writer:fence", Long.toString(ahead));
        long before = readWrite.withWriteLock("a", ttl, lease -> Mono.just(lease.fencingToken())).block(Duration.ofSeconds(10));
        assertThat(before).as("token while the record lives").isGreaterThan(ahead);

        redis.kill();
        redis.restart(); // empty: the record is gone
        long after = readWrite.withWriteLock("a", ttl, lease -> Mono.just(lease.fencingToken())).block(Duration.ofSeconds(10));

        assertThat(after).as("token after a restart that lost a record ahead of the clock").isLessThan(before);
        FencedResource resource = FencedResource.fenced();
        resource.write(before, "writer before the restart");
        assertThat(resource.write(after, "writer after the restart")).as("refused until the clock passes the lost token").isFalse();
    }

    // ---- Fault 2: frozen ----

    @ParameterizedTest
    @EnumSource(Kind.class)
    void anAcquisitionDuringSigstopTimesOutAndTheGrantThatArrivesLaterIsReleased(Kind kind) throws Exception {
        create(LockOptions.builder().acquireTimeout(Duration.ofMillis(500)).commandTimeout(Duration.ofMillis(200)).build());
        long acquireScriptsRun = CommandStats.calls(redis, "time"); // every acquire script reads the server's clock
        redis.pause();
        long pausedAt = System.nanoTime();
        Throwable error = failure(hold(kind, Duration.ofMinutes(1), lease -> Mono.just("x")).toFuture());
        long toError = millisSince(pausedAt);
        redis.resume();

        assertThat(error).isInstanceOf(LockAcquisitionException.class);
        // The attempts were sent before the timeout: Redis runs them on waking and grants one ...
        await().pollInterval(Duration.ofMillis(5)).until(() -> CommandStats.calls(redis, "time") > acquireScriptsRun);
        long resumedAt = System.nanoTime();
        // ... and the late grant is released by its token, long before its one-minute TTL.
        await().pollInterval(Duration.ofMillis(5)).atMost(Duration.ofSeconds(5)).until(() -> !exists(redis, kind.key));
        report("fault 2 SIGSTOP " + kind, "LockAcquisitionException after " + toError + " ms ("
                + ((LockAcquisitionException) error).attempts() + " attempts); late grant released within "
                + millisSince(resumedAt) + " ms of the queued attempts running");
        assertThat(hold(kind, Duration.ofMinutes(1), lease -> Mono.just("after")).block(Duration.ofSeconds(5))).isEqualTo("after");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aHolderFrozenOutLongerThanItsTtlIsToldWhenTheLeaseRunsOut(Kind kind) throws Exception {
        create(LockOptions.builder().commandTimeout(Duration.ofMillis(200)).build());
        Duration ttl = Duration.ofSeconds(2);
        AtomicReference<LockLease> held = new AtomicReference<>();
        AtomicLong bodyCancelledAt = new AtomicLong();
        AtomicLong failedAt = new AtomicLong();
        CompletableFuture<Object> holder = hold(kind, ttl, lease -> {
                    held.set(lease);
                    return Mono.never().doOnCancel(() -> bodyCancelledAt.set(System.nanoTime()));
                })
                .doOnError(e -> failedAt.set(System.nanoTime()))
                .toFuture();
        await().pollInterval(Duration.ofMillis(5)).until(() -> exists(redis, kind.key));

        redis.pause();
        Throwable error = failure(holder);
        redis.resume();

        assertThat(error).isInstanceOf(LockLostException.class).hasMessageContaining("could not renew it before the lease ran out");
        assertThat(error.getSuppressed()).isEmpty();
        long leaseEnd = held.get().validUntilNanos();
        assertThat(bodyCancelledAt.get()).as("when the body was cancelled: at the end of the lease, not before")
                .isBetween(leaseEnd, leaseEnd + TOLD_LATE.toNanos());
        assertThat(failedAt.get()).as("when the caller was told").isBetween(bodyCancelledAt.get(), leaseEnd + TOLD_LATE.toNanos());
        report("fault 2 holder " + kind, "SIGSTOP -> body cancelled " + Duration.ofNanos(bodyCancelledAt.get() - leaseEnd).toMillis()
                + " ms after the lease ran out (TTL " + ttl.toMillis() + " ms)");
        await().pollInterval(Duration.ofMillis(5)).atMost(Duration.ofSeconds(5)).until(() -> !exists(redis, kind.key));
    }
}
