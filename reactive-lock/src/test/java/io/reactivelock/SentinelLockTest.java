package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.reactivelock.support.RedisSentinelSet;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The lock through a Sentinel {@link io.lettuce.core.RedisURI} ({@link ReactiveRedisLock#create(io.lettuce.core.RedisURI,
 * LockOptions)}, unchanged): Lettuce asks the Sentinels for the master, and asks again when it reconnects after
 * a failover.
 */
class SentinelLockTest {

    private static final Duration TTL = Duration.ofSeconds(10);
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final Duration ACQUIRE_TIMEOUT = Duration.ofSeconds(20);
    private static final Duration POLL = Duration.ofMillis(20);

    private RedisSentinelSet sentinels;
    private ReactiveRedisLock lock;

    @BeforeEach
    void setUp() {
        sentinels = RedisSentinelSet.start();
        lock = ReactiveRedisLock.create(sentinels.uri(), LockOptions.builder()
                .renewalInterval(Duration.ofMillis(200))
                .commandTimeout(Duration.ofMillis(500))
                .acquireTimeout(ACQUIRE_TIMEOUT)
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
    void afterAFailoverThatLostTheKeyTheHolderLosesTheLockAndNewAcquisitionsUseThePromotedReplica() throws Exception {
        sentinels.detachReplica();
        AtomicReference<LockLease> firstLease = new AtomicReference<>();
        CountDownLatch bodyCancelled = new CountDownLatch(1);
        CompletableFuture<Object> first = lock.withLock("order", TTL, lease -> {
            firstLease.set(lease);
            return Mono.never().doOnCancel(bodyCancelled::countDown);
        }).toFuture();
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
        assertThat(secondLease.get().fencingToken()).as("fencing token after the failover")
                .isGreaterThan(firstLease.get().fencingToken());

        assertThat(first).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
                .havingCause()
                .isInstanceOf(LockLostException.class)
                .withMessageContaining("it expired or another holder took it");
        assertThat(bodyCancelled.getCount()).as("body still running").isZero();
        release.tryEmitEmpty();
        second.join();
    }
}
