package io.reactivelock.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.TooManyPendingAcquisitionsException;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

/**
 * One lock instance keeps at most {@code maxPendingAcquisitions} acquisitions in progress; past
 * it a subscription fails at once, and every way out of waiting (lock granted, failure,
 * cancellation) gives its place back.
 */
@WithRedis
class PendingAcquisitionsBoundTest {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(20);

    private RedisServer redis;
    private final List<ReactiveRedisLock> locks = new ArrayList<>();
    private final List<Disposable> subscriptions = new ArrayList<>();

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
    }

    @AfterEach
    void tearDown() {
        subscriptions.forEach(Disposable::dispose);
        locks.forEach(ReactiveRedisLock::close);
    }

    private ReactiveRedisLock lock(LockOptions.Builder options) {
        ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), options.build());
        locks.add(lock);
        return lock;
    }

    private ReactiveRedisLock bounded(int maxPending) {
        return lock(LockOptions.builder().maxPendingAcquisitions(maxPending).acquireTimeout(Duration.ofMinutes(5)));
    }

    /** Holds lock {@code name} from another lock instance until the returned sink completes. */
    private Sinks.Empty<Void> holdElsewhere(String name) {
        Sinks.Empty<Void> release = Sinks.empty();
        subscriptions.add(lock(LockOptions.builder()).withLock(name, TTL, release.asMono()).subscribe());
        await().pollInterval(Duration.ofMillis(10)).until(() -> "1".equals(redis.call("EXISTS", "lock:{" + name + "}")));
        return release;
    }

    private static void assertRefused(Throwable e, int maxPending) {
        assertThat(e).isInstanceOf(TooManyPendingAcquisitionsException.class)
                .isInstanceOf(LockAcquisitionException.class)
                .hasMessageContaining("maxPendingAcquisitions");
        TooManyPendingAcquisitionsException refused = (TooManyPendingAcquisitionsException) e;
        assertThat(refused.maxPendingAcquisitions()).isEqualTo(maxPending);
        assertThat(refused.attempts()).isZero();
    }

    @Test
    void theDefaultBoundIsTenThousandAndItMustBePositive() {
        assertThat(LockOptions.defaults().maxPendingAcquisitions()).isEqualTo(10_000)
                .isEqualTo(LockOptions.DEFAULT_MAX_PENDING_ACQUISITIONS);
        assertThat(LockOptions.builder().maxPendingAcquisitions(1).build().maxPendingAcquisitions()).isEqualTo(1);
        assertThatThrownBy(() -> LockOptions.builder().maxPendingAcquisitions(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxPendingAcquisitions");
        assertThatThrownBy(() -> LockOptions.builder().maxPendingAcquisitions(-1))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void exactlyMaxAcquisitionsWaitAndTheNextFailsAtOnceWithoutTouchingRedis() {
        ReactiveRedisLock lock = bounded(2);
        Sinks.Empty<Void> holder = holdElsewhere("a");
        Flux<String> twoWaiters = Flux.merge(lock.withLock("a", TTL, Mono.just("first")),
                lock.withLock("a", TTL, Mono.just("second")));
        StepVerifier.create(twoWaiters)
                .expectSubscription()
                .then(() -> StepVerifier.create(lock.withLock("b", TTL, Mono.just("third")))
                        .expectErrorSatisfies(e -> assertRefused(e, 2))
                        .verify(WAIT))
                .then(() -> assertThat(redis.call("EXISTS", "lock:{b}", "lock:{b}:fence")).isEqualTo("0"))
                .then(holder::tryEmitEmpty)
                .expectNextCount(2)
                .expectComplete().verify(WAIT);
        StepVerifier.create(lock.withLock("b", TTL, Mono.just("after"))).expectNext("after").expectComplete().verify(WAIT);
    }

    @Test
    void aBurstBeyondTheBoundIsRefusedAndTheAcceptedRestStillGetTheLock() {
        int maxPending = 50;
        ReactiveRedisLock lock = bounded(maxPending);
        Sinks.Empty<Void> holder = holdElsewhere("a");
        AtomicInteger refused = new AtomicInteger();
        AtomicInteger done = new AtomicInteger();
        for (int i = 0; i < 500; i++) {
            subscriptions.add(lock.withLock("a", TTL, Mono.just(i)).subscribe(v -> done.incrementAndGet(), e -> {
                if (e instanceof TooManyPendingAcquisitionsException) {
                    refused.incrementAndGet();
                }
            }));
        }
        assertThat(refused).as("refused at subscription").hasValue(500 - maxPending);
        holder.tryEmitEmpty();
        await().pollInterval(Duration.ofMillis(10)).atMost(WAIT).until(() -> done.get() == maxPending);
    }

    @Test
    void cancellingAWaitingAcquisitionGivesItsPlaceBack() {
        ReactiveRedisLock lock = bounded(1);
        Sinks.Empty<Void> holder = holdElsewhere("a");
        Disposable waiting = lock.withLock("a", TTL, Mono.just("cancelled")).subscribe();
        StepVerifier.create(lock.withLock("a", TTL, Mono.just("refused")))
                .expectErrorSatisfies(e -> assertRefused(e, 1))
                .verify(WAIT);
        waiting.dispose();
        StepVerifier.create(lock.withLock("a", TTL, Mono.just("next")))
                .expectSubscription()
                .then(holder::tryEmitEmpty)
                .expectNext("next")
                .expectComplete().verify(WAIT);
    }

    @Test
    void aFailedAcquisitionGivesItsPlaceBack() {
        ReactiveRedisLock lock = lock(LockOptions.builder().maxPendingAcquisitions(1).acquireTimeout(Duration.ZERO));
        holdElsewhere("a");
        for (int i = 0; i < 3; i++) {
            StepVerifier.create(lock.withLock("a", TTL, Mono.just("never")))
                    .expectErrorSatisfies(e -> assertThat(e).isExactlyInstanceOf(LockAcquisitionException.class))
                    .verify(WAIT);
        }
    }

    @Test
    void aHeldLockDoesNotCountAsPending() {
        ReactiveRedisLock lock = bounded(1);
        Sinks.Empty<Void> body = Sinks.empty();
        subscriptions.add(lock.withLock("a", TTL, body.asMono()).subscribe());
        await().pollInterval(Duration.ofMillis(10)).until(() -> "1".equals(redis.call("EXISTS", "lock:{a}")));
        StepVerifier.create(lock.withLock("b", TTL, Mono.just("while a is held")))
                .expectNext("while a is held")
                .expectComplete().verify(WAIT);
        body.tryEmitEmpty();
    }
}
