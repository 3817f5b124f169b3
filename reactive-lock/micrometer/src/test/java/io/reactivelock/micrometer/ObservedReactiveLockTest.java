package io.reactivelock.micrometer;

import static io.micrometer.observation.tck.TestObservationRegistryAssert.assertThat;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.contextpropagation.ObservationThreadLocalAccessor;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

/** The observation a tracer sees around {@code withLock}; a real Redis, a TestObservationRegistry. */
@WithRedis
class ObservedReactiveLockTest {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(10);

    private final TestObservationRegistry registry = TestObservationRegistry.create();
    private final List<String> events = new CopyOnWriteArrayList<>();
    private final List<String> stops = new CopyOnWriteArrayList<>();
    private ReactiveRedisLock redisLock;
    private ReactiveLock lock;

    @BeforeEach
    void setUp(RedisServer redis) {
        registry.observationConfig().observationHandler(new ObservationHandler<>() {
            @Override
            public void onEvent(Observation.Event event, Observation.Context context) {
                events.add(event.getName() + ": " + event.getContextualName());
            }

            @Override
            public void onStop(Observation.Context context) {
                stops.add(context.getName());
            }

            @Override
            public boolean supportsContext(Observation.Context context) {
                return true;
            }
        });
        redisLock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder().acquireTimeout(Duration.ZERO).build());
        lock = new ObservedReactiveLock(redisLock, registry);
    }

    @AfterEach
    void tearDown() {
        redisLock.close();
    }

    @Test
    void aLockTakenShowsTheWaitAsAnEventAndEndsWithSuccess() {
        StepVerifier.create(lock.withLock("sale:42", TTL, Mono.just(1))).expectNext(1).verifyComplete();

        assertThat(registry).hasSingleObservationThat()
                .hasNameEqualTo(ObservedReactiveLock.NAME)
                .hasBeenStarted()
                .hasBeenStopped()
                .hasLowCardinalityKeyValue("outcome", "success")
                .hasHighCardinalityKeyValue("lock", "sale:42")
                .doesNotHaveLowCardinalityKeyValueWithKey("lock")
                .doesNotHaveError();
        assertThat(events).singleElement().asString()
                .matches(ObservedReactiveLock.ACQUIRED_EVENT + ": waited \\d+ ms for lock sale:42");
    }

    @Test
    void theObservationIsStoppedBeforeTheCallerSeesTheOutcome() {
        Mono<Boolean> stoppedWhenDone = lock.withLock("a", TTL, Mono.just(1))
                .then(Mono.fromCallable(() -> stops.size() == 1));
        StepVerifier.create(stoppedWhenDone).expectNext(true).verifyComplete();
    }

    @Test
    void theObservationIsAChildOfTheCallersAndTheParentOfTheBodys() {
        Observation request = Observation.start("http.request", registry);
        Mono<Observation> seenByBody = lock.withLock("a", TTL,
                Mono.deferContextual(context -> Mono.just(context.<Observation>get(ObservationThreadLocalAccessor.KEY))));

        StepVerifier.create(seenByBody.contextWrite(c -> c.put(ObservationThreadLocalAccessor.KEY, request)))
                .assertNext(observation -> {
                    assertThat(observation.getContext().getName()).isEqualTo(ObservedReactiveLock.NAME);
                    assertThat(observation.getContext().getParentObservation()).isSameAs(request);
                })
                .verifyComplete();
        request.stop();
    }

    @Test
    void aBusyLockEndsTheObservationWithTheErrorAndNoAcquiredEvent() {
        Sinks.Empty<Void> finish = Sinks.empty();
        AtomicBoolean held = new AtomicBoolean();
        Disposable holder = redisLock.withLock("a", TTL, Mono.fromRunnable(() -> held.set(true)).then(finish.asMono()))
                .subscribe();
        await().pollInterval(Duration.ofMillis(5)).untilTrue(held);

        StepVerifier.create(lock.withLock("a", TTL, Mono.just(1))).verifyError(LockAcquisitionException.class);

        assertThat(registry).hasSingleObservationThat()
                .hasBeenStopped()
                .hasLowCardinalityKeyValue("outcome", "busy")
                .assertThatError().isInstanceOf(LockAcquisitionException.class);
        assertThat(events).isEmpty();
        finish.tryEmitEmpty();
        holder.dispose();
    }

    @Test
    void aFailingBodyEndsTheObservationWithItsError() {
        IllegalStateException boom = new IllegalStateException("boom");
        StepVerifier.create(lock.withLock("a", TTL, Mono.error(boom))).verifyErrorMatches(e -> e == boom);

        assertThat(registry).hasSingleObservationThat()
                .hasLowCardinalityKeyValue("outcome", "error")
                .hasError(boom);
    }

    @Test
    void cancellingStopsTheObservation() {
        StepVerifier.create(lock.withLock("a", TTL, Mono.never()))
                .then(() -> await().pollInterval(Duration.ofMillis(5)).until(() -> !events.isEmpty()))
                .thenCancel()
                .verify(WAIT);

        assertThat(registry).hasSingleObservationThat()
                .hasBeenStopped()
                .hasLowCardinalityKeyValue("outcome", "cancelled");
    }

    @Test
    void withLockManyPassesTheValuesInsideOneObservationThatEndsWithSuccessBeforeTheCompletion() {
        Flux<String> values = lock.withLockMany("export:1", TTL, lease -> Flux.just("a", "b")
                .concatWith(Flux.deferContextual(context -> Flux.just(
                        context.<Observation>get(ObservationThreadLocalAccessor.KEY).getContext().getName()))));
        StepVerifier.create(values.concatWith(Mono.fromCallable(() -> "stopped=" + stops.size())))
                .expectNext("a", "b", ObservedReactiveLock.NAME, "stopped=1")
                .verifyComplete();

        assertThat(registry).hasSingleObservationThat()
                .hasNameEqualTo(ObservedReactiveLock.NAME)
                .hasBeenStopped()
                .hasLowCardinalityKeyValue("outcome", "success")
                .hasHighCardinalityKeyValue("lock", "export:1");
        assertThat(events).singleElement().asString()
                .matches(ObservedReactiveLock.ACQUIRED_EVENT + ": waited \\d+ ms for lock export:1");
    }

    @Test
    void withLockManyEndsTheObservationWithTheBodysErrorOrTheCancel() {
        IllegalStateException boom = new IllegalStateException("boom");
        StepVerifier.create(lock.withLockMany("a", TTL, lease -> Flux.just(1).concatWith(Flux.error(boom))))
                .expectNext(1)
                .verifyErrorMatches(e -> e == boom);
        StepVerifier.create(lock.withLockMany("b", TTL, lease -> Flux.just(1).concatWith(Flux.never())))
                .expectNext(1)
                .thenCancel()
                .verify(WAIT);

        assertThat(registry).hasNumberOfObservationsEqualTo(2);
        assertThat(registry).hasAnObservationWithAKeyValue("outcome", "error")
                .hasAnObservationWithAKeyValue("outcome", "cancelled");
    }

    @Test
    void badArgumentsAreRejectedAtTheCallWithNoObservation() {
        assertThatThrownBy(() -> lock.withLock("", TTL, Mono.just(1))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> lock.withLockMany("", TTL, lease -> Flux.just(1))).isInstanceOf(IllegalArgumentException.class);
        assertThat(registry).doesNotHaveAnyObservation();
    }
}
