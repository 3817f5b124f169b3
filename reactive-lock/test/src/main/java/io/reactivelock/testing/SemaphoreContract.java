package io.reactivelock.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveSemaphore;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.publisher.PublisherProbe;

/**
 * What every {@link ReactiveSemaphore} does, written once and run against the Redis client's
 * semaphores ({@code SemaphoreRedisContractTest}) and the in-memory client's
 * ({@code SemaphoreInMemoryContractTest}).
 *
 * <p>A semaphore's capacity is fixed per view, so the factory, {@link #newSemaphores}, gives the
 * semaphores of every capacity of one new client: the Redis subclass returns
 * {@code ReactiveRedisLock.create(uri, options)::semaphore}, a decorator
 * {@code capacity -> new MySemaphore(client.semaphore(capacity))}. The tests take views of several
 * capacities on one name and check that each enforces its own bound against the live holders.
 *
 * <p>Published in reactive-lock-test: a user's own {@code ReactiveSemaphore} decorator can run it by
 * extending this class.
 */
public abstract class SemaphoreContract {

    static final Duration TTL = Duration.ofSeconds(30);
    static final Duration WAIT = Duration.ofSeconds(10);

    /**
     * A new client of the implementation under test, with {@code options}, on the same permits as
     * the others of the test (closed by the subclass), as the semaphore of each capacity it hands
     * out: {@code apply(capacity)} must throw {@link IllegalArgumentException} for a capacity below 1.
     */
    protected abstract IntFunction<ReactiveSemaphore> newSemaphores(LockOptions options);

    /** The permits of {@code name} held by live holders now, read from the store. Blocking; test thread only. */
    protected abstract int permitsHeld(String name);

    /** Ends every lease on {@code name} as if their TTL had run out unnoticed. Blocking. */
    protected abstract void expirePermits(String name);

    /** Takes {@code n} permits for a holder that dies at once: nobody renews nor releases them. Blocking. */
    protected abstract boolean holdElsewhere(String name, int capacity, int n, Duration ttl);

    /** The names that have anything left in the store (permits, keys). Blocking. */
    protected abstract Set<String> namesLeft();

    /** Bodies running with their renewal watchdog now, over every semaphore of the test. */
    protected abstract int activeLeases();

    private IntFunction<ReactiveSemaphore> semaphores;
    private IntFunction<ReactiveSemaphore> onceSemaphores;

    /** The semaphore of {@code capacity} most tests use: default options, but a 5 s acquire timeout. */
    ReactiveSemaphore semaphore(int capacity) {
        if (semaphores == null) {
            semaphores = newSemaphores(LockOptions.builder().acquireTimeout(Duration.ofSeconds(5)).build());
        }
        return semaphores.apply(capacity);
    }

    /** A semaphore of {@code capacity} that tries once. */
    private ReactiveSemaphore once(int capacity) {
        if (onceSemaphores == null) {
            onceSemaphores = newSemaphores(LockOptions.builder().acquireTimeout(Duration.ZERO).build());
        }
        return onceSemaphores.apply(capacity);
    }

    /** Waits for what the lock does in the background, up to {@link #WAIT}. */
    private static void eventually(Callable<Boolean> condition) {
        Eventually.until(WAIT, condition);
    }

    /** {@link #permitsHeld} from a body: hops off the reactive thread to call it. */
    private Mono<Integer> permitsNow(String name) {
        return Mono.fromCallable(() -> permitsHeld(name)).subscribeOn(Schedulers.boundedElastic());
    }

    private static void assertBusy(ReactiveSemaphore once, String name, int n) {
        PublisherProbe<String> body = PublisherProbe.of(Mono.just("x"));
        StepVerifier.create(once.withPermits(name, n, TTL, body.mono()))
                .expectErrorSatisfies(e -> {
                    assertThat(e).isInstanceOf(LockAcquisitionException.class).hasMessageContaining("'" + name + "'");
                    assertThat(((LockAcquisitionException) e).reason()).isEqualTo(LockAcquisitionException.Reason.BUSY);
                })
                .verify(WAIT);
        body.assertWasNotSubscribed();
    }

    // ---- Outcomes of the body ----

    @Test
    void aBodyRunsWithItsPermitsHeldAndTheyAreGivenBackBeforeItsValue() {
        RecordingListener events = new RecordingListener();
        ReactiveSemaphore listened = newSemaphores(LockOptions.builder().listener(events).build()).apply(3);
        StepVerifier.create(listened.withPermits("a", 2, TTL, permitsNow("a")))
                .expectNext(2)
                .verifyComplete();
        assertThat(permitsHeld("a")).as("given back before the value was emitted").isZero();
        assertThat(events.list).containsExactly("acquired a", "released a");
    }

    @Test
    void aBodyErrorIsPropagatedUnchangedAndThePermitsGivenBack() {
        IllegalStateException boom = new IllegalStateException("boom");
        StepVerifier.create(semaphore(2).withPermits("a", 1, TTL, Mono.error(boom)))
                .expectErrorSatisfies(e -> assertThat(e).isSameAs(boom))
                .verify(WAIT);
        assertThat(permitsHeld("a")).isZero();
    }

    @Test
    void cancellingWhileTheBodyRunsCancelsItAndGivesThePermitsBack() {
        PublisherProbe<Object> body = PublisherProbe.of(Mono.never());
        Disposable running = semaphore(2).withPermits("a", 2, TTL, body.mono()).subscribe();
        // The permits are taken in the store before the grant reaches the caller, which then runs the body.
        eventually(body::wasSubscribed);
        assertThat(permitsHeld("a")).isEqualTo(2);
        running.dispose();
        body.assertWasCancelled();
        eventually(() -> permitsHeld("a") == 0);
    }

    @Test
    void leasesNameTheSemaphoreAndCarryNoFencingToken() {
        StepVerifier.create(semaphore(2).withPermits("pool", 1, TTL, Mono::just))
                .assertNext(lease -> {
                    assertThat(lease.name()).isEqualTo("pool");
                    assertThat(lease.hasFencingToken()).isFalse();
                    assertThat(lease.remaining()).isPositive().isLessThanOrEqualTo(TTL);
                })
                .verifyComplete();
    }

    // ---- Admission ----

    @Test
    void upToCapacityHoldersAreInsideAtOnceAndOneMoreWaitsForARelease() throws Exception {
        List<Sinks.Empty<Void>> holders = new ArrayList<>();
        List<PublisherProbe<Void>> bodies = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Sinks.Empty<Void> done = Sinks.empty();
            PublisherProbe<Void> body = PublisherProbe.of(done.asMono());
            holders.add(done);
            bodies.add(body);
            semaphore(3).withPermits("a", 1, TTL, body.mono()).subscribe();
        }
        // The permits are taken in the store before each grant reaches its caller, which then runs the body.
        eventually(() -> bodies.stream().allMatch(PublisherProbe::wasSubscribed));
        assertThat(permitsHeld("a")).isEqualTo(3);
        assertBusy(once(3), "a", 1);

        CompletableFuture<String> waiter = semaphore(3).withPermits("a", 1, TTL, Mono.just("in")).toFuture();
        holders.get(0).tryEmitEmpty();
        assertThat(waiter.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo("in");
        holders.forEach(Sinks.Empty::tryEmitEmpty);
        eventually(() -> permitsHeld("a") == 0);
    }

    @Test
    void permitsAreCountedNotHolders() {
        Disposable holder = semaphore(3).withPermits("a", 2, TTL, Mono.never()).subscribe();
        eventually(() -> permitsHeld("a") == 2);
        assertBusy(once(3), "a", 2);
        StepVerifier.create(once(3).withPermits("a", 1, TTL, permitsNow("a"))).expectNext(3).verifyComplete();
        holder.dispose();
    }

    @Test
    void eachSemaphoreEnforcesItsOwnCapacityAgainstTheLiveHolders() {
        Disposable holder = semaphore(3).withPermits("a", 2, TTL, Mono.never()).subscribe();
        eventually(() -> permitsHeld("a") == 2);
        assertBusy(once(2), "a", 1);
        StepVerifier.create(once(5).withPermits("a", 3, TTL, permitsNow("a"))).expectNext(5).verifyComplete();
        holder.dispose();
    }

    @Test
    void aDeadHoldersPermitsComeBackAfterItsTtlAndNotBeforeWhileOthersStillHold() {
        // A live holder with a longer lease: the dead one's permit must come back on its own.
        Disposable live = semaphore(2).withPermits("a", 1, TTL, Mono.never()).subscribe();
        eventually(() -> permitsHeld("a") == 1);
        long start = System.nanoTime();
        assertThat(holdElsewhere("a", 2, 1, Duration.ofSeconds(1))).isTrue();
        StepVerifier.create(semaphore(2).withPermits("a", 1, TTL, Mono.fromCallable(System::nanoTime)))
                .assertNext(entered -> assertThat(Duration.ofNanos(entered - start))
                        // The store's clock counts whole milliseconds: 10 ms of slack for its rounding.
                        .isGreaterThanOrEqualTo(Duration.ofMillis(990)))
                .verifyComplete();
        live.dispose();
    }

    @Test
    void acquisitionsPastMaxPendingAreRefusedWithTheirReason() {
        Disposable holder = semaphore(1).withPermits("a", 1, TTL, Mono.never()).subscribe();
        eventually(() -> permitsHeld("a") == 1);
        ReactiveSemaphore bounded = newSemaphores(LockOptions.builder().maxPendingAcquisitions(1).build()).apply(1);
        Disposable waiting = bounded.withPermits("a", 1, TTL, Mono.just(1)).subscribe();
        StepVerifier.create(bounded.withPermits("b", 1, TTL, Mono.just(2)))
                .expectErrorSatisfies(e -> assertThat(((LockAcquisitionException) e).reason())
                        .isEqualTo(LockAcquisitionException.Reason.TOO_MANY_PENDING))
                .verify(WAIT);
        waiting.dispose();
        holder.dispose();
    }

    // ---- Leases ----

    @Test
    void renewalKeepsThePermitsWhileTheBodyOutlivesTheTtl() {
        // Renewals every third of a 2 s TTL leave ~1.3 s of slack for a late timer on a loaded machine
        // (a 1 s TTL once lost a reader's lease to a 0.7 s timer stall in CI).
        StepVerifier.create(semaphore(2).withPermits("a", 1, Duration.ofSeconds(2),
                        Mono.delay(Duration.ofMillis(5000)).then(permitsNow("a"))))
                .expectNext(1)
                .verifyComplete();
    }

    @Test
    void lostPermitsCancelTheBodyWithLockLostExceptionAndTheListenerHearsIt() {
        RecordingListener events = new RecordingListener();
        // Found lost at the next renewal (every 100 ms), not when the lease runs out: that is two
        // minutes, twelve times WAIT.
        ReactiveSemaphore listened = newSemaphores(LockOptions.builder().listener(events)
                .renewalInterval(Duration.ofMillis(100)).build()).apply(1);
        PublisherProbe<Object> body = PublisherProbe.of(Mono.never());
        StepVerifier.create(listened.withPermits("a", 1, Duration.ofMinutes(2), body.mono()))
                .expectSubscription()
                .then(() -> eventually(() -> permitsHeld("a") == 1))
                .then(() -> expirePermits("a"))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockLostException.class).hasMessageContaining("'a'"))
                .verify(WAIT);
        body.assertWasCancelled();
        assertThat(events.list).filteredOn(e -> !e.startsWith("renewed")).containsExactly("acquired a", "lost a", "released a");
        StepVerifier.create(once(1).withPermits("a", 1, TTL, Mono.just("next"))).expectNext("next").verifyComplete();
    }

    // ---- Arguments ----

    @ParameterizedTest(name = "capacity={0}")
    @ValueSource(ints = {0, -1})
    void aCapacityBelowOneIsRejectedWhenTheSemaphoreIsMade(int capacity) {
        IntFunction<ReactiveSemaphore> semaphores = newSemaphores(LockOptions.defaults());
        assertThatThrownBy(() -> semaphores.apply(capacity))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("capacity must be at least 1");
    }

    @ParameterizedTest(name = "capacity={0}, permits={1}")
    @CsvSource({"3, 0", "3, -2", "3, 4"})
    void aPermitCountOutsideOneToTheCapacityIsRejectedAtCallTimeAndHeard(int capacity, int permits) {
        RecordingListener events = new RecordingListener();
        ReactiveSemaphore listened = newSemaphores(LockOptions.builder().listener(events).build()).apply(capacity);
        assertThat(listened.capacity()).isEqualTo(capacity);
        PublisherProbe<String> body = PublisherProbe.of(Mono.just("x"));
        assertThatThrownBy(() -> listened.withPermits("a", permits, TTL, body.mono()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("permits must be from 1 to the capacity (" + capacity + ")");
        assertThat(events.failures).singleElement().isInstanceOf(IllegalArgumentException.class);
        body.assertWasNotSubscribed();
        assertThat(permitsHeld("a")).isZero();
    }

    @Test
    void theLocksArgumentChecksApply() {
        assertThatThrownBy(() -> semaphore(1).withPermits(null, 1, TTL, Mono.just(1)))
                .isInstanceOf(NullPointerException.class).hasMessage("name");
        assertThatThrownBy(() -> semaphore(1).withPermits("a", 1, Duration.ofMillis(99), Mono.just(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 100 ms");
        assertThatThrownBy(() -> semaphore(1).withPermits("a", 1, TTL, (Mono<Object>) null))
                .isInstanceOf(NullPointerException.class).hasMessage("body");
        assertThatThrownBy(() -> semaphore(1).withPermit("a", TTL, null))
                .isInstanceOf(NullPointerException.class).hasMessage("body");
    }

    // ---- The capacity checker ----

    private static final int CAPACITY = 3;
    private static final int BODIES = 60;

    /** Permits held by the bodies inside now, counted by the bodies themselves, and the most ever. */
    private final AtomicInteger inside = new AtomicInteger();
    private final AtomicInteger mostInside = new AtomicInteger();

    /** A body holding {@code n} permits: enters, hops threads twice around a short wait, leaves before its release. */
    private Mono<Integer> checkedBody(int n) {
        return Mono.defer(() -> {
            mostInside.accumulateAndGet(inside.addAndGet(n), Math::max);
            return Mono.just(n)
                    .publishOn(Schedulers.parallel())
                    .delayElement(Duration.ofMillis(2))
                    .publishOn(Schedulers.parallel())
                    // doOnTerminate runs before completion travels on to the release; doFinally would run after it.
                    .doOnTerminate(() -> inside.addAndGet(-n));
        });
    }

    /** Runs {@link #BODIES} bodies of 1 or 2 permits at once, each wrapped by {@code guard} (the semaphore, or nothing). */
    private long runCapacityWorkload(BiFunction<Integer, Mono<Integer>, Mono<Integer>> guard) {
        return Flux.range(0, BODIES)
                .flatMap(i -> guard.apply(i, checkedBody(1 + i % 2)), BODIES)
                .count()
                .block(Duration.ofMinutes(2));
    }

    @Test
    void concurrentHoldersNeverHoldMoreThanTheCapacity() {
        // Three instances: three clients of one store, as three processes would be.
        LockOptions patient = LockOptions.builder().acquireTimeout(Duration.ofMinutes(1)).build();
        List<ReactiveSemaphore> clients = List.of(newSemaphores(patient).apply(CAPACITY),
                newSemaphores(patient).apply(CAPACITY), newSemaphores(patient).apply(CAPACITY));
        long done = runCapacityWorkload((i, body) ->
                clients.get(i % clients.size()).withPermits("pool", 1 + i % 2, Duration.ofSeconds(5), body));
        assertThat(done).as("bodies that ran").isEqualTo(BODIES);
        assertThat(mostInside).as("permits held at once").hasValueBetween(1, CAPACITY);
    }

    @Test
    void withoutTheSemaphoreTheCheckerSeesMoreThanTheCapacity() {
        runCapacityWorkload((i, body) -> body);
        assertThat(mostInside.get())
                .as("negative control: the checker must see over-admission when nothing prevents it")
                .isGreaterThan(CAPACITY);
    }

    // ---- Cancel storm ----

    @Test
    void aCancelStormLeavesNoPermitsAndNoRenewalRunningWithinTenSeconds() {
        ReactiveSemaphore storm = newSemaphores(LockOptions.builder()
                .backoff(Duration.ofMillis(1), Duration.ofMillis(5)).renewalInterval(Duration.ofMillis(20)).build()).apply(3);
        AtomicInteger bodiesCut = new AtomicInteger();
        // Cancels within 3 ms, within 250 ms, and 1 ms into a body (see CancelStorm): not only
        // early ones, since a storm whose cancels all came before their grants would hold every
        // name with abandoned grants and cut no body.
        Flux.range(0, 5_000)
                .flatMap(i -> {
                    ThreadLocalRandom random = ThreadLocalRandom.current();
                    return CancelStorm.acquisition(i, 60, 250, bodiesCut, body -> storm.withPermits(
                                    "storm:" + random.nextInt(16), 1 + random.nextInt(3), Duration.ofMinutes(1), body))
                            .onErrorResume(LockAcquisitionException.class, e -> Mono.empty());
                }, 64)
                .then()
                .block(Duration.ofMinutes(2));
        // The TTL is a minute: what is gone within 10 s was released, not expired. Not 1 s: in the full
        // build (its test JVMs sharing 2 cores) the last background releases of the storm were still
        // on their way after 1 s (2 of 16 names, clean-clone run of 554d69e), while alone it clears in time.
        Eventually.untilAsserted(Duration.ofSeconds(10), () -> {
            assertThat(activeLeases()).as("renewals running").isZero();
            assertThat(namesLeft()).as("names with permits left").isEmpty();
        });
        assertThat(bodiesCut).as("cancels also hit running bodies").hasPositiveValue();
    }
}
