package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.reactivelock.support.FencedResource;
import io.reactivelock.support.NeedsRedis;
import io.reactivelock.support.RedisSentinelSet;
import io.reactivelock.support.RedisServer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import io.reactivelock.redis.ReactiveRedisLock;

/**
 * The lock through a Sentinel {@link io.lettuce.core.RedisURI} ({@link ReactiveRedisLock#create(io.lettuce.core.RedisURI,
 * LockOptions)}, unchanged): Lettuce asks the Sentinels for the master, and asks again when it reconnects after
 * a failover. A holder whose key the failover lost is told at its next renewal, never later than its
 * lease; a lost fencing record lets tokens go backwards if it was ahead of the new master's clock. With
 * replica-acknowledged grants off: these tests cut the replica off before the lock is taken, which would
 * otherwise refuse the grant ({@code redis.ReplicaAcknowledgedGrantsTest} shows a grant surviving a failover).
 */
@NeedsRedis
class SentinelLockTest {

    private static final Duration TTL = Duration.ofSeconds(10);
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final Duration ACQUIRE_TIMEOUT = Duration.ofSeconds(20);
    private static final Duration POLL = Duration.ofMillis(20);
    /**
     * How late after the end of its lease a holder may be told that it lost the lock: the timer that
     * ends the lease fires on a shared Reactor thread and the error reaches the caller through the
     * body's cancellation, on a 2-core machine shared with other builds.
     */
    private static final Duration TOLD_LATE = Duration.ofMillis(300);

    private RedisSentinelSet sentinels;
    private ReactiveRedisLock lock;

    @BeforeEach
    void setUp() {
        sentinels = RedisSentinelSet.start();
        lock = ReactiveRedisLock.create(sentinels.uri(), LockOptions.builder()
                .renewalInterval(Duration.ofMillis(200))
                .commandTimeout(Duration.ofMillis(500))
                .acquireTimeout(ACQUIRE_TIMEOUT)
                .replicaAcknowledgement(0)
                .build());
    }

    @AfterEach
    void tearDown() {
        lock.close();
        sentinels.close();
    }

    @Test
    void locksOnTheMasterTheSentinelsNameAndReleases() {
        Sinks.Empty<Void> release = Sinks.empty();
        AtomicReference<LockLease> lease = new AtomicReference<>();
        CompletableFuture<Void> holder = lock.withLock("order", TTL, granted -> {
            lease.set(granted);
            return release.asMono();
        }).toFuture();
        await().atMost(WAIT).pollInterval(POLL).until(() -> lease.get() != null);

        assertThat(sentinels.master().call("GET", "lock:{order}")).as("holder on the master").isEqualTo(lease.get().token());
        release.tryEmitEmpty();
        holder.join();
        assertThat(sentinels.master().call("EXISTS", "lock:{order}")).as("released").isEqualTo("0");
    }

    @Test
    void aLockAskedOfAReplicaIsRetriedUntilItsTimeoutAsDuringAFailover() {
        // What a client still connected to a demoted master sees: its scripts' writes are refused.
        try (ReactiveRedisLock onReplica = ReactiveRedisLock.create(sentinels.replica().uri(),
                LockOptions.builder().acquireTimeout(Duration.ofSeconds(1)).build())) {
            assertThatThrownBy(() -> onReplica.withLock("order", TTL, Mono.just("never")).block(WAIT))
                    .isInstanceOfSatisfying(LockAcquisitionException.class, e -> assertThat(e.attempts()).isGreaterThan(1))
                    .rootCause().hasMessageContaining("READONLY");
        }
    }

    @Test
    void afterAFailoverThatLostTheKeyTheHolderLosesTheLockBeforeItsLeaseRunsOutAndNewAcquisitionsUseThePromotedReplica()
            throws Exception {
        sentinels.detachReplica();
        AtomicReference<LockLease> firstLease = new AtomicReference<>();
        AtomicLong failedAt = new AtomicLong();
        CountDownLatch bodyCancelled = new CountDownLatch(1);
        CompletableFuture<Object> first = lock.withLock("order", TTL, lease -> {
                    firstLease.set(lease);
                    return Mono.never().doOnCancel(bodyCancelled::countDown);
                })
                .doOnError(e -> failedAt.set(System.nanoTime()))
                .toFuture();
        await().atMost(WAIT).pollInterval(POLL).until(() -> firstLease.get() != null);

        sentinels.master().kill();
        sentinels.failOver();
        assertThat(sentinels.replica().call("DBSIZE")).as("keys on the promoted replica").isEqualTo("0");

        // The known limit: the promoted replica grants the lock again while the first holder runs.
        Sinks.Empty<Void> release = Sinks.empty();
        AtomicReference<LockLease> secondLease = new AtomicReference<>();
        CompletableFuture<Void> second = lock.withLock("order", TTL, lease -> {
            secondLease.set(lease);
            return release.asMono();
        }).toFuture();
        await().atMost(WAIT).pollInterval(POLL).until(() -> secondLease.get() != null || second.isDone());
        assertThat(second).as("second acquisition").isNotCompletedExceptionally();
        assertThat(sentinels.replica().call("GET", "lock:{order}")).as("holder on the promoted replica")
                .isEqualTo(secondLease.get().token());
        assertThat(secondLease.get().fencingToken()).as("fencing token after the failover (both servers read this host's clock)")
                .isGreaterThan(firstLease.get().fencingToken());

        assertThat(first).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
                .havingCause()
                .isInstanceOf(LockLostException.class)
                .withMessageContaining("it expired or another holder took it");
        assertThat(bodyCancelled.getCount()).as("body still running").isZero();
        assertThat(failedAt.get()).as("when the first holder was told, against the end of its lease")
                .isLessThanOrEqualTo(firstLease.get().validUntilNanos() + TOLD_LATE.toNanos());
        release.tryEmitEmpty();
        second.join();
    }

    @Test
    void fencingTokensGoBackwardsAfterAFailoverThatLostAFencingRecordAheadOfTheNewMastersClock() {
        sentinels.detachReplica();
        // As if the old master's clock had run an hour ahead of the replica's.
        RedisServer master = sentinels.master();
        long serverMicros = Long.parseLong(master.call("EVAL", "local t = redis.call('TIME') return t[1] * 1000000 + t[2]", "0"));
        master.call("SET", "lock:{order}:fence", Long.toString(serverMicros + TimeUnit.HOURS.toMicros(1)));
        AtomicReference<LockLease> firstLease = new AtomicReference<>();
        lock.withLock("order", TTL, lease -> {
            firstLease.set(lease);
            return Mono.never();
        }).subscribe(null, lost -> {});
        await().atMost(WAIT).pollInterval(POLL).until(() -> firstLease.get() != null);

        master.kill();
        sentinels.failOver();
        assertThat(sentinels.replica().call("EXISTS", "lock:{order}:fence")).as("fencing record on the promoted replica")
                .isEqualTo("0");
        LockLease second = lock.withLock("order", TTL, Mono::just).block(WAIT);

        assertThat(second.fencingToken()).as("fencing token after the failover").isLessThan(firstLease.get().fencingToken());
        // What that does to a fenced resource: a write the first holder sent before it was told arrives
        // after the new holder's, and is accepted over it.
        FencedResource resource = FencedResource.fenced();
        assertThat(resource.write(second.fencingToken(), "new holder")).isTrue();
        assertThat(resource.write(firstLease.get().fencingToken(), "first holder")).as("the first holder's late write").isTrue();
        assertThat(resource.value()).isEqualTo("first holder");
    }
}
