package io.reactivelock.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.reactivelock.LeaseTimeExceededException;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

/** The meters a user finds in the registry after using the lock; a real Redis, a SimpleMeterRegistry. */
@WithRedis
class LockMetricsTest {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(10);

    private final MeterRegistry registry = new SimpleMeterRegistry();
    private final LockMetrics metrics = new LockMetrics(registry, false);
    private RedisServer redis;
    private ReactiveRedisLock lock;

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
        lock = lock(b -> b);
    }

    @AfterEach
    void tearDown() {
        lock.close();
    }

    /** A lock on the test's Redis that reports to {@link #metrics}, trying once by default. */
    private ReactiveRedisLock lock(UnaryOperator<LockOptions.Builder> options) {
        return ReactiveRedisLock.create(redis.uri(),
                options.apply(LockOptions.builder().acquireTimeout(Duration.ZERO).listener(metrics)).build());
    }

    private long acquires(String outcome) {
        Timer timer = registry.find(LockMetrics.ACQUIRE).tag("outcome", outcome).timer();
        return timer == null ? 0 : timer.count();
    }

    private double active() {
        return registry.get(LockMetrics.HOLDERS).gauge().value();
    }

    @Test
    void aLockTakenAndReleasedIsTimedWhileWaitingAndWhileHeld() {
        StepVerifier.create(lock.withLock("a", TTL, Mono.fromSupplier(this::active)))
                .expectNext(1.0)
                .verifyComplete();
        assertThat(acquires("acquired")).isEqualTo(1);
        assertThat(registry.get(LockMetrics.HELD).timer().count()).isEqualTo(1);
        assertThat(active()).isZero();
    }

    @Test
    void aReleaseThatHandsTheLockToAWaiterIsCountedAsAHandOff() {
        // Fair: Redis hands the lock to the first in line, wherever it waits, so the hand-off does not
        // depend on when the waiter joined this process's line.
        try (ReactiveRedisLock client = lock(b -> b.acquireTimeout(WAIT))) {
            ReactiveLock waiting = client.fair();
            Sinks.Empty<Void> holding = Sinks.empty();
            Disposable holder = waiting.withLock("a", TTL, holding.asMono()).subscribe();
            await().until(() -> active() == 1.0);
            Mono<String> waiter = waiting.withLock("a", TTL, Mono.just("handed")).cache();
            Disposable subscribed = waiter.subscribe();
            await().until(() -> "1".equals(redis.call("LLEN", "lock:{a}:queue")));
            holding.tryEmitEmpty();
            StepVerifier.create(waiter).expectNext("handed").expectComplete().verify(WAIT);
            assertThat(registry.get(LockMetrics.HANDOFFS).counter().count()).isEqualTo(1.0);
            holder.dispose();
            subscribed.dispose();
        }
    }

    @Test
    void eachKindOfPrimitiveIsTaggedAsSuchInTheSameMeters() {
        try (ReactiveRedisLock client = ReactiveRedisLock.create(redis.uri(), LockOptions.builder().listener(metrics).build())) {
            StepVerifier.create(client.semaphore(2).withPermits("s", 1, TTL, Mono.just("permit"))).expectNext("permit").verifyComplete();
        }
        StepVerifier.create(lock.withLock("a", TTL, Mono.just("lock"))).expectNext("lock").verifyComplete();
        assertThat(registry.get(LockMetrics.ACQUIRE).tag("primitive", "semaphore").tag("outcome", "acquired").timer().count())
                .isEqualTo(1);
        assertThat(registry.get(LockMetrics.ACQUIRE).tag("primitive", "lock").tag("outcome", "acquired").timer().count())
                .isEqualTo(1);
        assertThat(registry.get(LockMetrics.HELD).timers()).extracting(timer -> timer.getId().getTag("primitive"))
                .containsExactlyInAnyOrder("semaphore", "lock");
    }

    @Test
    void acquireFailuresAreCountedByCause() {
        Sinks.Empty<Void> finish = Sinks.empty();
        Disposable holder = lock.withLock("busy", TTL, finish.asMono()).subscribe();
        await().pollInterval(Duration.ofMillis(5)).until(() -> active() == 1);
        StepVerifier.create(lock.withLock("busy", TTL, Mono.just(1))).verifyError(LockAcquisitionException.class);

        redis.call("HSET", "lock:{wrong-type}", "f", "v"); // GET on it fails with WRONGTYPE, at once
        StepVerifier.create(lock.withLock("wrong-type", TTL, Mono.just(1)))
                .verifyErrorSatisfies(e -> assertThat(e).isInstanceOf(LockAcquisitionException.class).hasCauseInstanceOf(
                        io.lettuce.core.RedisCommandExecutionException.class));

        assertThatThrownBy(() -> lock.withLock("", TTL, Mono.just(1))).isInstanceOf(IllegalArgumentException.class);

        assertThat(acquires("busy")).isEqualTo(1);
        assertThat(acquires("redis-error")).isEqualTo(1);
        assertThat(acquires("invalid-argument")).isEqualTo(1);
        assertThat(acquires("acquired")).isEqualTo(1);
        finish.tryEmitEmpty();
        await().pollInterval(Duration.ofMillis(5)).until(() -> active() == 0);
        holder.dispose();
    }

    @Test
    void renewalsAreCounted() {
        Sinks.Empty<Void> finish = Sinks.empty();
        lock.withLock("a", Duration.ofMillis(300), finish.asMono()).subscribe();
        await().pollInterval(Duration.ofMillis(10)).atMost(WAIT)
                .until(() -> registry.find(LockMetrics.RENEWALS).counter() != null
                        && registry.get(LockMetrics.RENEWALS).counter().count() >= 2);
        finish.tryEmitEmpty();
        await().pollInterval(Duration.ofMillis(5)).until(() -> active() == 0);
    }

    @Test
    void leasesLostAreCountedByCause() {
        Mono<Void> never = Sinks.empty().asMono().then();
        StepVerifier.create(lock.withLock("a", Duration.ofMillis(300), never))
                .then(() -> {
                    await().pollInterval(Duration.ofMillis(5)).until(() -> active() == 1);
                    redis.call("DEL", "lock:{a}");
                })
                .expectError(LockLostException.class)
                .verify(WAIT);
        try (ReactiveRedisLock capped = lock(b -> b.maxLeaseTime(Duration.ofSeconds(1)))) {
            StepVerifier.create(capped.withLock("b", Duration.ofSeconds(1), never))
                    .expectError(LeaseTimeExceededException.class)
                    .verify(WAIT);
        }
        assertThat(registry.get(LockMetrics.LOST).tag("cause", "lost").counter().count()).isEqualTo(1);
        assertThat(registry.get(LockMetrics.LOST).tag("cause", "max-lease-time").counter().count()).isEqualTo(1);
        assertThat(registry.get(LockMetrics.HELD).timer().count()).as("both held, then let go").isEqualTo(2);
        assertThat(active()).isZero();
    }

    @Test
    void cancellingWhileHeldCountsAsReleasedAndWhileWaitingAsNeitherSuccessNorFailure() {
        try (ReactiveRedisLock waiting = lock(b -> b.acquireTimeout(WAIT))) {
            Sinks.Empty<Void> finish = Sinks.empty();
            StepVerifier.create(lock.withLock("a", TTL, finish.asMono()))
                    .then(() -> await().pollInterval(Duration.ofMillis(5)).until(() -> active() == 1))
                    .then(() -> StepVerifier.create(waiting.withLock("a", TTL, Mono.just(1)))
                            .expectSubscription()
                            .expectNoEvent(Duration.ofMillis(50))
                            .thenCancel()
                            .verify(WAIT))
                    .thenCancel()
                    .verify(WAIT);
        }
        assertThat(active()).isZero();
        assertThat(registry.get(LockMetrics.HELD).timer().count()).isEqualTo(1);
        assertThat(registry.get(LockMetrics.ACQUIRE).timers()).singleElement()
                .satisfies(t -> assertThat(t.getId().getTag("outcome")).isEqualTo("acquired"));
    }

    @Test
    void theMetricsAndTheMetersOfTheObservationLiveInOneRegistry() {
        ObservationRegistry observations = ObservationRegistry.create();
        observations.observationConfig().observationHandler(new DefaultMeterObservationHandler(registry));
        ReactiveLock observed = new ObservedReactiveLock(lock, observations);

        StepVerifier.create(observed.withLock("a", TTL, Mono.just(1))).expectNext(1).verifyComplete();

        assertThat(acquires("acquired")).isEqualTo(1);
        assertThat(registry.get(ObservedReactiveLock.NAME).tag("outcome", "success").timer().count()).isEqualTo(1);
        assertThat(active()).isZero();
    }

    @Test
    void lockNamesAreTagsOnlyWhenAskedFor() {
        StepVerifier.create(lock.withLock("untagged", TTL, Mono.just(1))).expectNext(1).verifyComplete();
        assertThat(registry.getMeters()).extracting(Meter::getId).allSatisfy(id -> assertThat(id.getTag("lock")).isNull());

        MeterRegistry tagged = new SimpleMeterRegistry();
        try (ReactiveRedisLock tagging = ReactiveRedisLock.create(redis.uri(),
                LockOptions.builder().listener(new LockMetrics(tagged, true)).build())) {
            StepVerifier.create(tagging.withLock("sale:42", TTL, Mono.just(1))).expectNext(1).verifyComplete();
            assertThatThrownBy(() -> tagging.withLock("x".repeat(600), TTL, Mono.just(1)))
                    .isInstanceOf(IllegalArgumentException.class);
        }
        assertThat(tagged.get(LockMetrics.ACQUIRE).tags("lock", "sale:42", "outcome", "acquired").timer().count()).isEqualTo(1);
        assertThat(tagged.get(LockMetrics.HELD).tag("lock", "sale:42").timer().count()).isEqualTo(1);
        assertThat(tagged.get(LockMetrics.ACQUIRE).tag("outcome", "invalid-argument").timer().getId().getTag("lock"))
                .as("a rejected name is not a tag value").isEqualTo("(invalid)");
    }
}
