package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LeaseTimeExceededException;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockOptions;
import io.reactivelock.support.CommandStats;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * Backoff, acquire timeout, renewal and the maximum lease time run on Reactor's schedulers, so
 * virtual time drives them. Redis stays real: between steps the test awaits the commands that
 * the step must have caused, counted by Redis itself, and, before the first move of the clock,
 * that the client has handled the first reply (it then arms the timer the move must fire: armed
 * after the move, it would be due that much later). In the client's package, for its count of
 * waiters.
 */
@WithRedis
class VirtualTimeTest {

    private static final Duration WAIT = Duration.ofSeconds(10);

    private RedisServer redis;
    private ReactiveRedisLock lock;

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
        redis.call("CONFIG", "RESETSTAT");
        lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                .acquireTimeout(Duration.ofSeconds(5))
                .backoff(Duration.ofSeconds(1), Duration.ofSeconds(1))
                .jitter(0)
                .maxLeaseTime(Duration.ofMinutes(1))
                .commandTimeout(Duration.ofMinutes(1))
                .build());
    }

    @AfterEach
    void tearDown() {
        lock.close();
    }

    @Test
    void aBusyLockIsRetriedOnEachBackoffStepAndTakenOnceFree() {
        redis.call("SET", "lock:{a}", "someone-else", "PX", "600000");
        StepVerifier.withVirtualTime(() -> lock.withLock("a", Duration.ofSeconds(30), Mono.just("mine")))
                .expectSubscription()
                .then(() -> awaitScriptCalls(1))
                .then(this::awaitRefusalHandled)
                .thenAwait(Duration.ofSeconds(1))
                .then(() -> awaitScriptCalls(2))
                .thenAwait(Duration.ofSeconds(1))
                .then(() -> awaitScriptCalls(3))
                .then(() -> redis.call("DEL", "lock:{a}"))
                .thenAwait(Duration.ofSeconds(1))
                .expectNext("mine")
                .verifyComplete();
        awaitReleased();
        assertThat(CommandStats.calls(redis, "evalsha")).as("four attempts, one a second, and the release").isEqualTo(5);
    }

    @Test
    void theAcquireTimeoutEndsTheWaitWithLockAcquisitionException() {
        redis.call("SET", "lock:{a}", "someone-else", "PX", "600000");
        StepVerifier.withVirtualTime(() -> lock.withLock("a", Duration.ofSeconds(30), Mono.just("mine")))
                .expectSubscription()
                .then(() -> awaitScriptCalls(1))
                .then(this::awaitRefusalHandled)
                .expectNoEvent(Duration.ofMillis(4_900))
                .thenAwait(Duration.ofMillis(100))
                .expectError(LockAcquisitionException.class)
                .verify(WAIT);
    }

    @Test
    void theLeaseIsRenewedEveryThirdOfTheTtl() {
        StepVerifier.withVirtualTime(() -> lock.withLock("a", Duration.ofSeconds(30), lease -> Mono.never()))
                .expectSubscription()
                .then(() -> awaitScriptCalls(1))
                .then(() -> awaitGrantHandled(lock))
                .thenAwait(Duration.ofSeconds(10))
                .then(() -> awaitScriptCalls(2))
                .thenAwait(Duration.ofSeconds(10))
                .then(() -> awaitScriptCalls(3))
                .thenCancel()
                .verify(WAIT);
        awaitReleased();
        assertThat(CommandStats.calls(redis, "evalsha")).as("acquire, a renewal at 10 s and at 20 s, release").isEqualTo(4);
    }

    @Test
    void theMaximumLeaseTimeCancelsTheBodyAndReleases() {
        // 55 s, so that the cap does not fall on a renewal tick (every 10 s).
        ReactiveRedisLock capped = ReactiveRedisLock.create(redis.uri(), lock.options().toBuilder()
                .maxLeaseTime(Duration.ofSeconds(55)).build());
        try {
            StepVerifier.withVirtualTime(() -> capped.withLock("a", Duration.ofSeconds(30), lease -> Mono.never()))
                    .expectSubscription()
                    .then(() -> awaitScriptCalls(1))
                    .then(() -> awaitGrantHandled(capped))
                    .thenAwait(Duration.ofSeconds(10))
                    .then(() -> awaitScriptCalls(2))
                    .thenAwait(Duration.ofSeconds(10))
                    .then(() -> awaitScriptCalls(3))
                    .thenAwait(Duration.ofSeconds(10))
                    .then(() -> awaitScriptCalls(4))
                    .thenAwait(Duration.ofSeconds(10))
                    .then(() -> awaitScriptCalls(5))
                    .thenAwait(Duration.ofSeconds(10))
                    .then(() -> awaitScriptCalls(6))
                    .expectNoEvent(Duration.ofMillis(4_999))
                    .thenAwait(Duration.ofMillis(1))
                    .expectError(LeaseTimeExceededException.class)
                    .verify(WAIT);
            awaitReleased();
            assertThat(CommandStats.calls(redis, "evalsha")).as("acquire, five renewals, release").isEqualTo(7);
        } finally {
            capped.close();
        }
    }

    /**
     * Waits until Redis has run {@code n} of our scripts (acquire, renew, release), and checks that it
     * ran no more: nothing else may have been due at this point of virtual time. A body that sees the
     * lease is acquired by a script (with a fencing token); one that does not first tries a plain
     * {@code SET NX PX}, and runs the script only when that finds the lock busy.
     */
    private void awaitScriptCalls(int n) {
        await().until(() -> CommandStats.calls(redis, "evalsha") >= n);
        assertThat(CommandStats.calls(redis, "evalsha")).as("scripts run so far").isEqualTo(n);
    }

    /**
     * Waits until the client has handled the reply that found the lock busy: the acquisition has
     * joined the lock's waiters, the last step before it arms its backoff (or deadline) timer.
     */
    private void awaitRefusalHandled() {
        await().until(() -> lock.localWaiters("a") == 1);
    }

    /** Waits until {@code client} has handled the grant: the body runs, the last step before the renewal timer is armed. */
    private static void awaitGrantHandled(ReactiveRedisLock client) {
        await().until(() -> client.activeLeases() == 1);
    }

    /**
     * Waits for the release. Every earlier command of the lock went on the same connection before
     * it, so once the key is gone Redis has run all of them and the count is final.
     */
    private void awaitReleased() {
        await().until(() -> "0".equals(redis.call("EXISTS", "lock:{a}")));
    }
}
