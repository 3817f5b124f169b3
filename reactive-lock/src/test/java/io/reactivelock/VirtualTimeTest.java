package io.reactivelock;

import static org.awaitility.Awaitility.await;

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
 * the step must have caused, counted by Redis itself.
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
                .thenAwait(Duration.ofSeconds(1))
                .then(() -> awaitScriptCalls(2))
                .thenAwait(Duration.ofSeconds(1))
                .then(() -> awaitScriptCalls(3))
                .then(() -> redis.call("DEL", "lock:{a}"))
                .thenAwait(Duration.ofSeconds(1))
                .expectNext("mine")
                .verifyComplete();
    }

    @Test
    void theAcquireTimeoutEndsTheWaitWithLockAcquisitionException() {
        redis.call("SET", "lock:{a}", "someone-else", "PX", "600000");
        StepVerifier.withVirtualTime(() -> lock.withLock("a", Duration.ofSeconds(30), Mono.just("mine")))
                .expectSubscription()
                .then(() -> awaitScriptCalls(1))
                .expectNoEvent(Duration.ofMillis(4_900))
                .thenAwait(Duration.ofMillis(100))
                .expectError(LockAcquisitionException.class)
                .verify(WAIT);
    }

    @Test
    void theLeaseIsRenewedEveryThirdOfTheTtl() {
        StepVerifier.withVirtualTime(() -> lock.withLock("a", Duration.ofSeconds(30), Mono.never()))
                .expectSubscription()
                .then(() -> awaitScriptCalls(1))
                .thenAwait(Duration.ofSeconds(10))
                .then(() -> awaitScriptCalls(2))
                .thenAwait(Duration.ofSeconds(10))
                .then(() -> awaitScriptCalls(3))
                .thenCancel()
                .verify(WAIT);
        await().until(() -> "0".equals(redis.call("EXISTS", "lock:{a}")));
    }

    @Test
    void theMaximumLeaseTimeCancelsTheBodyAndReleases() {
        StepVerifier.withVirtualTime(() -> lock.withLock("a", Duration.ofSeconds(30), Mono.never()))
                .expectSubscription()
                .then(() -> awaitScriptCalls(1))
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
                .thenAwait(Duration.ofSeconds(10))
                .expectError(LeaseTimeExceededException.class)
                .verify(WAIT);
        await().until(() -> "0".equals(redis.call("EXISTS", "lock:{a}")));
    }

    /** Waits until Redis has run at least {@code n} of our scripts (acquire, renew, release). */
    private void awaitScriptCalls(int n) {
        await().until(() -> CommandStats.calls(redis, "evalsha") >= n);
    }
}
