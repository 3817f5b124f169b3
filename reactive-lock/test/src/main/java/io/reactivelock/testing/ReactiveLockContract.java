package io.reactivelock.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.reactivelock.LeaseTimeExceededException;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockAcquisitionException.Reason;
import io.reactivelock.LockLease;
import io.reactivelock.LockListener;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.ReactiveMultiLock;
import io.reactivelock.ReentrantReactiveLock;
import io.reactivelock.TooManyPendingAcquisitionsException;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.Disposable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.publisher.PublisherProbe;
import reactor.util.context.ContextView;

/**
 * What every {@link ReactiveLock} does, written once against the interface and run against each
 * implementation by a subclass (the Redis client and its fair lock, standalone and on a Cluster,
 * Redlock, the in-memory client), so they cannot drift. The reentrancy tests run
 * {@link ReentrantReactiveLock} over each one; the multi-lock tests, a multi-lock of the same store
 * ({@link #newMultiLock}) against the lock, where the implementation has one.
 *
 * <p>Published in reactive-lock-test: a user's own {@code ReactiveLock} decorator can run it by
 * extending this class.
 */
public abstract class ReactiveLockContract {

    static final Duration TTL = Duration.ofSeconds(30);
    static final Duration WAIT = Duration.ofSeconds(10);
    private static final int BODIES = 32;

    /** A new lock of the implementation under test, closed by the subclass after the test. */
    protected abstract ReactiveLock newLock(LockOptions options);

    /** Ends the current lease of {@code name} as if its TTL had run out unnoticed. Blocking; test thread only. */
    protected abstract void expireLease(String name);

    /** Whether {@code name} is locked now, read from the implementation's store. Blocking; test thread only. */
    protected abstract boolean isLocked(String name);

    /**
     * A multi-lock of the same store as {@link #newLock} (on Redis: of the same deployment), with
     * {@code options}, closed by the subclass; or {@code null} (the default) for an implementation
     * that has none, which skips the tests of a multi-lock and a lock on one name.
     */
    protected @Nullable ReactiveMultiLock newMultiLock(LockOptions options) {
        return null;
    }

    /**
     * Whether the implementation issues fencing tokens (Redlock does not): the declared capability
     * by which the fencing checks are skipped, itself checked against every lease.
     */
    protected boolean issuesFencingTokens() {
        return true;
    }

    private ReactiveLock lock;

    /** The lock most tests use: default options, but a 5 s acquire timeout. */
    ReactiveLock lock() {
        if (lock == null) {
            lock = newLock(LockOptions.builder().acquireTimeout(Duration.ofSeconds(5)).build());
        }
        return lock;
    }

    /** Waits for what the lock does in the background, up to {@link #WAIT}. */
    private static void eventually(Callable<Boolean> condition) {
        Eventually.until(WAIT, condition);
    }

    /** {@link #isLocked} from a body: hops off the reactive thread that runs the body to call it. */
    private Mono<Boolean> lockedNow(String name) {
        return Mono.fromCallable(() -> isLocked(name)).subscribeOn(Schedulers.boundedElastic());
    }

    // ---- Outcomes of the body ----

    @Test
    void bodyValueIsEmittedAndTheLockReleasedBeforeIt() {
        StepVerifier.create(lock().withLock("a", TTL, lockedNow("a")))
                .expectNext(true)
                .verifyComplete();
        assertThat(isLocked("a")).as("released before the value was emitted").isFalse();
    }

    @Test
    void emptyBodyCompletesEmptyAndReleases() {
        StepVerifier.create(lock().withLock("a", TTL, Mono.empty())).verifyComplete();
        assertThat(isLocked("a")).isFalse();
    }

    @Test
    void bodyErrorIsPropagatedUnchangedAndTheLockReleased() {
        IllegalStateException boom = new IllegalStateException("boom");
        StepVerifier.create(lock().withLock("a", TTL, Mono.error(boom)))
                .expectErrorSatisfies(e -> assertThat(e).isSameAs(boom).hasNoSuppressedExceptions())
                .verify(WAIT);
        assertThat(isLocked("a")).isFalse();
    }

    @Test
    void aBodyFunctionReturningNullFailsWithNullPointerExceptionAndReleases() {
        StepVerifier.create(lock().withLock("a", TTL, lease -> null))
                .expectError(NullPointerException.class)
                .verify(WAIT);
        assertThat(isLocked("a")).isFalse();
    }

    @Test
    void aBodyThatThrowsInsteadOfReturningAMonoFailsAndReleases() {
        StepVerifier.create(lock().withLock("a", TTL, lease -> {
                    throw new IllegalStateException("thrown");
                }))
                .expectErrorMessage("thrown")
                .verify(WAIT);
        assertThat(isLocked("a")).isFalse();
    }

    @Test
    void cancellingWhileTheBodyRunsCancelsTheBodyAndReleasesTheLock() {
        PublisherProbe<Object> body = PublisherProbe.of(Mono.never());
        Disposable running = lock().withLock("a", TTL, body.mono()).subscribe();
        // The lock is taken in the store before the grant reaches the caller, which then runs the body.
        eventually(body::wasSubscribed);
        assertThat(isLocked("a")).isTrue();
        running.dispose();
        body.assertWasCancelled();
        eventually(() -> !isLocked("a"));
    }

    @Test
    void anAcquisitionCancelledAsItIsSubscribedLeavesNothingLocked() {
        PublisherProbe<String> body = PublisherProbe.of(Mono.just("x"));
        lock().withLock("a", TTL, body.mono()).subscribe(new BaseSubscriber<>() {
            @Override
            protected void hookOnSubscribe(Subscription subscription) {
                cancel();
            }
        });
        // Nobody else is around: a later acquisition gets the lock within its acquire timeout, not after the TTL.
        StepVerifier.create(lock().withLock("a", TTL, Mono.just("free")))
                .expectNext("free")
                .verifyComplete();
        body.assertWasNotSubscribed();
    }

    @Test
    void nothingIsLockedUntilSubscription() {
        PublisherProbe<String> body = PublisherProbe.of(Mono.just("x"));
        Mono<String> locked = lock().withLock("lazy", TTL, body.mono());
        assertThat(isLocked("lazy")).isFalse();
        body.assertWasNotSubscribed();
        StepVerifier.create(locked).expectNext("x").verifyComplete();
    }

    // ---- Leases and fencing tokens ----

    @Test
    void eachSubscriptionIsANewAcquisitionWithItsOwnTokenAndAHigherFencingToken() {
        assumeTrue(issuesFencingTokens(), "the lock declares no fencing tokens");
        Mono<LockLease> leaseOf = lock().withLock("a", TTL, Mono::just);
        LockLease first = leaseOf.block(WAIT);
        LockLease second = leaseOf.block(WAIT);
        // 128 random bits in hex; a lock may append to it (the Redis lock: its client's address).
        assertThat(second.token()).isNotEqualTo(first.token()).matches("[0-9a-f]{32}.*");
        assertThat(second.fencingToken()).isGreaterThan(first.fencingToken());
    }

    @Test
    void leaseReportsItsNameTokenAndRemainingTime() {
        StepVerifier.create(lock().withLock("order:42", TTL, lease -> Mono.just(lease)))
                .assertNext(lease -> {
                    assertThat(lease.name()).isEqualTo("order:42");
                    assertThat(lease.remaining()).isPositive().isLessThanOrEqualTo(TTL);
                })
                .verifyComplete();
    }

    @Test
    void everyLeaseCarriesAFencingTokenExactlyWhenTheLockDeclaresIt() {
        LockLease lease = lock().withLock("a", TTL, (Function<LockLease, Mono<LockLease>>) Mono::just).block(WAIT);
        assertThat(lease).isNotNull();
        assertThat(lease.hasFencingToken()).isEqualTo(issuesFencingTokens());
        if (!issuesFencingTokens()) {
            assertThatThrownBy(lease::fencingToken).isInstanceOf(UnsupportedOperationException.class);
        }
    }

    @Test
    void renewalKeepsTheLockWhileTheBodyOutlivesTheTtl() {
        // Renewals every third of a 1 s TTL leave ~600 ms of slack for a late timer on a loaded machine.
        StepVerifier.create(lock().withLock("a", Duration.ofSeconds(1),
                        Mono.delay(Duration.ofMillis(2500)).then(lockedNow("a"))))
                .expectNext(true)
                .verifyComplete();
    }

    @Test
    void aLostLeaseCancelsTheBodyWithLockLostExceptionAndLeavesTheNextHolderAlone() {
        // A lease of TTL (30 s) renewed every 100 ms: the loss is found by a renewal within WAIT (10 s), not by the lease running out.
        ReactiveLock renewing = newLock(LockOptions.builder().renewalInterval(Duration.ofMillis(100)).build());
        PublisherProbe<Object> body = PublisherProbe.of(Mono.never());
        PublisherProbe<Object> nextBody = PublisherProbe.of(Mono.never());
        AtomicReference<Disposable> next = new AtomicReference<>();
        StepVerifier.create(renewing.withLock("a", TTL, body.mono()))
                .expectSubscription()
                .then(() -> eventually(() -> isLocked("a")))
                .then(() -> expireLease("a"))
                .then(() -> next.set(renewing.withLock("a", TTL, nextBody.mono()).subscribe()))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockLostException.class)
                        .hasMessageContaining("'a'"))
                .verify(WAIT);
        body.assertWasCancelled();
        eventually(nextBody::wasSubscribed);
        // The lost holder's release was sent before its error came; a one-try acquisition through the
        // same lock goes after it (on the same connection, for a Redis lock): once refused as busy, the
        // release has run, and can be checked.
        StepVerifier.create(renewing.withAcquireTimeout(Duration.ZERO).withLock("a", TTL, Mono.just("taken")))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockAcquisitionException.class)
                        .satisfies(x -> assertThat(((LockAcquisitionException) x).reason()).isEqualTo(Reason.BUSY)))
                .verify(WAIT);
        assertThat(isLocked("a")).as("the next holder keeps the lock").isTrue();
        next.get().dispose();
    }

    @Test
    void reachingTheMaximumLeaseTimeCancelsTheBodyAndReleases() {
        // A TTL of whole seconds: a loaded machine may stall a renewal for a few hundred ms.
        ReactiveLock capped = newLock(LockOptions.builder().maxLeaseTime(Duration.ofMillis(2500)).build());
        PublisherProbe<Object> body = PublisherProbe.of(Mono.never());
        StepVerifier.create(capped.withLock("a", Duration.ofSeconds(2), body.mono()))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LeaseTimeExceededException.class)
                        .satisfies(x -> assertThat(((LeaseTimeExceededException) x).maxLeaseTime())
                                .isEqualTo(Duration.ofMillis(2500))))
                .verify(WAIT);
        body.assertWasCancelled();
        assertThat(isLocked("a")).isFalse();
    }

    // ---- Waiting ----

    @Test
    void aWaiterGetsTheLockOnceTheHolderReleasesIt() throws Exception {
        Sinks.One<String> holderDone = Sinks.one();
        Disposable holder = lock().withLock("a", TTL, holderDone.asMono()).subscribe();
        eventually(() -> isLocked("a"));
        CompletableFuture<String> waiter = lock().withLock("a", TTL, Mono.just("mine")).toFuture();
        assertThat(waiter).isNotDone();
        holderDone.tryEmitValue("done");
        assertThat(waiter.get()).isEqualTo("mine");
        holder.dispose();
    }

    @Test
    void aLockHeldForTheWholeAcquireTimeoutFailsWithLockAcquisitionExceptionAndTheBodyNeverRuns() {
        Disposable holder = lock().withLock("a", TTL, Mono.never()).subscribe();
        eventually(() -> isLocked("a"));
        ReactiveLock impatient = newLock(LockOptions.builder().acquireTimeout(Duration.ofMillis(300)).build());
        PublisherProbe<String> body = PublisherProbe.of(Mono.just("x"));
        StepVerifier.create(impatient.withLock("a", TTL, body.mono()))
                .expectErrorSatisfies(e -> {
                    assertThat(e).isInstanceOf(LockAcquisitionException.class).hasNoCause()
                            .hasMessageContaining("'a'");
                    LockAcquisitionException failure = (LockAcquisitionException) e;
                    assertThat(failure.reason()).isEqualTo(LockAcquisitionException.Reason.BUSY);
                    assertThat(failure.lockName()).isEqualTo("a");
                    assertThat(failure.waited()).isGreaterThanOrEqualTo(Duration.ofMillis(300));
                })
                .verify(WAIT);
        body.assertWasNotSubscribed();
        assertThat(isLocked("a")).as("the holder keeps the lock").isTrue();
        holder.dispose();
    }

    @Test
    void aZeroAcquireTimeoutFailsAtOnceWhenTheLockIsBusy() {
        Disposable holder = lock().withLock("a", TTL, Mono.never()).subscribe();
        eventually(() -> isLocked("a"));
        ReactiveLock once = newLock(LockOptions.builder().acquireTimeout(Duration.ZERO).build());
        StepVerifier.create(once.withLock("a", TTL, Mono.just("x")))
                .expectErrorSatisfies(e -> assertThat(((LockAcquisitionException) e).attempts()).isEqualTo(1))
                .verify(WAIT);
        holder.dispose();
    }

    // ---- A multi-lock and a lock of one name ----

    /** A multi-lock of the same store with {@code options}; skips the test if the implementation has none. */
    private ReactiveMultiLock multiLock(LockOptions options) {
        ReactiveMultiLock multi = newMultiLock(options);
        assumeTrue(multi != null, "the implementation has no multi-lock on the same store");
        return multi;
    }

    private static void assertBusy(Mono<?> acquisition, PublisherProbe<?> body) {
        StepVerifier.create(acquisition)
                .expectErrorSatisfies(e -> assertThat(((LockAcquisitionException) e).reason())
                        .isEqualTo(LockAcquisitionException.Reason.BUSY))
                .verify(WAIT);
        body.assertWasNotSubscribed();
    }

    @Test
    void aMultiLockWaitsForALockHeldOnOneOfItsNames() throws Exception {
        ReactiveMultiLock once = multiLock(LockOptions.builder().acquireTimeout(Duration.ZERO).build());
        Sinks.Empty<Void> holderDone = Sinks.empty();
        Disposable holder = lock().withLock("b", TTL, holderDone.asMono()).subscribe();
        eventually(() -> isLocked("b"));

        PublisherProbe<String> refused = PublisherProbe.of(Mono.just("x"));
        assertBusy(once.withLocks(List.of("a", "b"), TTL, refused.mono()), refused);
        assertThat(isLocked("a")).as("all or none: the free name was not kept").isFalse();

        ReactiveMultiLock patient = multiLock(LockOptions.builder().acquireTimeout(Duration.ofSeconds(5)).build());
        CompletableFuture<Boolean> multi = patient.withLocks(List.of("a", "b"), TTL,
                lease -> lockedNow("a").zipWith(lockedNow("b"), Boolean::logicalAnd)).toFuture();
        assertThat(multi).isNotDone();
        holderDone.tryEmitEmpty();
        assertThat(multi.get(WAIT.toSeconds(), TimeUnit.SECONDS)).as("both names held by the multi-lock").isTrue();
        holder.dispose();
        assertThat(isLocked("a") || isLocked("b")).isFalse();
    }

    @Test
    void aLockWaitsForAMultiLockHoldingItsName() throws Exception {
        ReactiveMultiLock multi = multiLock(LockOptions.builder().acquireTimeout(Duration.ofSeconds(5)).build());
        Sinks.Empty<Void> multiDone = Sinks.empty();
        Disposable holder = multi.withLocks(List.of("a", "b"), TTL, multiDone.asMono()).subscribe();
        eventually(() -> isLocked("a") && isLocked("b"));

        ReactiveLock once = newLock(LockOptions.builder().acquireTimeout(Duration.ZERO).build());
        for (String name : List.of("a", "b")) {
            PublisherProbe<String> refused = PublisherProbe.of(Mono.just("x"));
            assertBusy(once.withLock(name, TTL, refused.mono()), refused);
        }
        CompletableFuture<String> waiter = lock().withLock("b", TTL, Mono.just("after the multi-lock")).toFuture();
        multiDone.tryEmitEmpty();
        assertThat(waiter.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo("after the multi-lock");
        holder.dispose();
    }

    // ---- withLockMany: a body of many values ----

    @Test
    void withLockManyPassesTheBodysValuesWhileHeldAndReleasesBeforeItCompletes() {
        StepVerifier.create(lock().withLockMany("a", TTL, lease -> Flux.just("x", "y")
                        .concatWith(lockedNow("a").map(held -> "held=" + held + " name=" + lease.name()))))
                .expectNext("x", "y", "held=true name=a")
                .verifyComplete();
        assertThat(isLocked("a")).as("released before the completion was signalled").isFalse();
    }

    @Test
    void withLockManyPassesTheBodysErrorUnchangedAfterItsValuesAndReleases() {
        IllegalStateException boom = new IllegalStateException("boom");
        StepVerifier.create(lock().withLockMany("a", TTL, lease -> Flux.just(1).concatWith(Flux.error(boom))))
                .expectNext(1)
                .expectErrorSatisfies(e -> assertThat(e).isSameAs(boom))
                .verify(WAIT);
        assertThat(isLocked("a")).isFalse();
    }

    @Test
    void cancellingWithLockManyCancelsTheBodyAndReleases() {
        PublisherProbe<Long> body = PublisherProbe.of(Flux.<Long>never().startWith(0L));
        List<Long> received = new CopyOnWriteArrayList<>();
        Disposable running = lock().withLockMany("a", TTL, lease -> body.flux()).subscribe(received::add);
        eventually(() -> received.size() == 1);
        assertThat(isLocked("a")).isTrue();
        running.dispose();
        body.assertWasCancelled();
        eventually(() -> !isLocked("a"));
    }

    @Test
    void anotherAcquirerWaitsWhileTheWithLockManyBodyRunsAndGetsTheLockWhenItEnds() throws Exception {
        Sinks.Many<String> values = Sinks.many().unicast().onBackpressureBuffer();
        List<String> received = new CopyOnWriteArrayList<>();
        CompletableFuture<Void> many = lock().withLockMany("a", TTL, lease -> values.asFlux())
                .doOnNext(received::add).then().toFuture();
        eventually(() -> isLocked("a"));
        CompletableFuture<String> waiter = lock().withLock("a", TTL, Mono.just("after")).toFuture();

        values.tryEmitNext("first");
        eventually(() -> received.equals(List.of("first")));
        ReactiveLock once = newLock(LockOptions.builder().acquireTimeout(Duration.ZERO).build());
        PublisherProbe<String> refused = PublisherProbe.of(Mono.just("x"));
        assertBusy(once.withLock("a", TTL, refused.mono()), refused);
        assertThat(waiter).as("waits while the body runs").isNotDone();

        values.tryEmitComplete();
        many.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(waiter.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo("after");
    }

    // ---- Mutual exclusion ----

    private final AtomicInteger occupancy = new AtomicInteger();
    private final AtomicInteger maxOccupancy = new AtomicInteger();
    private volatile int counter;

    @Test
    void withTheLockEveryUpdateLandsOneHolderAtATimeWithIncreasingFencingTokens() {
        List<Long> fencesInRunOrder = new CopyOnWriteArrayList<>();
        ReactiveLock patient = newLock(LockOptions.builder().acquireTimeout(Duration.ofSeconds(30)).build());
        runConcurrently(body -> patient.withLock("counter", Duration.ofSeconds(5), lease -> {
            fencesInRunOrder.add(issuesFencingTokens() ? lease.fencingToken() : 0L);
            return body;
        }));
        assertThat(counter).as("lost updates").isEqualTo(BODIES);
        assertThat(maxOccupancy).as("bodies inside at once").hasValue(1);
        if (issuesFencingTokens()) {
            assertThat(fencesInRunOrder).hasSize(BODIES).isSorted().doesNotHaveDuplicates();
        }
    }

    @Test
    void withoutTheLockTheSameWorkloadLosesUpdatesOrOverlaps() {
        runConcurrently(Function.identity());
        assertThat(counter != BODIES || maxOccupancy.get() > 1)
                .as("negative control: the checker must see the race when nothing prevents it")
                .isTrue();
    }

    /** Runs {@link #BODIES} non-atomic increments of {@link #counter} at once, each hopping threads between read and write. */
    private void runConcurrently(Function<Mono<Integer>, Mono<Integer>> guard) {
        Flux.range(0, BODIES)
                .flatMap(i -> guard.apply(Mono.defer(() -> {
                    maxOccupancy.accumulateAndGet(occupancy.incrementAndGet(), Math::max);
                    return Mono.fromCallable(() -> counter)
                            .publishOn(Schedulers.parallel())
                            .delayElement(Duration.ofMillis(2))
                            .map(read -> counter = read + 1)
                            .publishOn(Schedulers.parallel())
                            .doOnTerminate(occupancy::decrementAndGet);
                })), BODIES)
                .then()
                .block(Duration.ofSeconds(60));
    }

    // ---- Arguments (checked when withLock is called) ----

    @Test
    void nullNameIsRejected() {
        assertThatThrownBy(() -> lock().withLock(null, TTL, Mono.just(1)))
                .isInstanceOf(NullPointerException.class).hasMessage("name");
    }

    @Test
    void emptyNameIsRejected() {
        assertThatThrownBy(() -> lock().withLock("", TTL, Mono.just(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 to 512");
    }

    @Test
    void nameOverTheLimitIsRejectedAndTheLimitItselfAccepted() {
        assertThatThrownBy(() -> lock().withLock("x".repeat(513), TTL, Mono.just(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got 513");
        assertThatCode(() -> lock().withLock("x".repeat(512), TTL, Mono.just(1)).block(TTL)).doesNotThrowAnyException();
    }

    @Test
    void nameWithAnUnpairedSurrogateIsRejected() {
        assertThatThrownBy(() -> lock().withLock("a\uD800b", TTL, Mono.just(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("surrogate");
        assertThatThrownBy(() -> lock().withLock("a\uDC00", TTL, Mono.just(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("surrogate");
    }

    @Test
    void nullTtlIsRejected() {
        assertThatThrownBy(() -> lock().withLock("a", null, Mono.just(1)))
                .isInstanceOf(NullPointerException.class).hasMessage("ttl");
    }

    @Test
    void zeroNegativeAndTooShortTtlsAreRejected() {
        for (Duration ttl : new Duration[] {Duration.ZERO, Duration.ofMillis(-5), Duration.ofMillis(99)}) {
            assertThatThrownBy(() -> lock().withLock("a", ttl, Mono.just(1)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 100 ms");
        }
    }

    @Test
    void ttlAboveTheMaximumLeaseTimeIsRejected() {
        assertThatThrownBy(() -> lock().withLock("a", Duration.ofMinutes(11), Mono.just(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxLeaseTime");
    }

    @Test
    void aRenewalIntervalNotBelowTheTtlIsRejected() {
        ReactiveLock fixedRenewal = newLock(LockOptions.builder().renewalInterval(Duration.ofSeconds(5)).build());
        assertThatThrownBy(() -> fixedRenewal.withLock("a", Duration.ofSeconds(5), Mono.just(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("renewalInterval");
        assertThatCode(() -> fixedRenewal.withLock("a", Duration.ofSeconds(6), Mono.just(1)))
                .doesNotThrowAnyException();
    }

    @Test
    void nullBodiesAreRejected() {
        assertThatThrownBy(() -> lock().withLock("a", TTL, (Mono<Object>) null))
                .isInstanceOf(NullPointerException.class).hasMessage("body");
        assertThatThrownBy(() -> lock().withLock("a", TTL, (Function<LockLease, Mono<Object>>) null))
                .isInstanceOf(NullPointerException.class).hasMessage("body");
    }

    // ---- What the listener hears ----

    /** A lock that fails at once on a busy name, reporting to {@code events}. */
    private ReactiveLock listenedTo(LockListener events) {
        return newLock(LockOptions.builder().acquireTimeout(Duration.ZERO).listener(events).build());
    }

    @Test
    void aPerCallAcquireTimeoutOverridesTheOptionsAndSharesTheLock() {
        Disposable holder = lock().withLock("a", TTL, Mono.never()).subscribe();
        eventually(() -> isLocked("a"));
        ReactiveLock patient = newLock(LockOptions.builder().acquireTimeout(Duration.ofMinutes(5)).build());
        StepVerifier.create(patient.withAcquireTimeout(Duration.ofMillis(200)).withLock("a", TTL, Mono.just("x")))
                .expectErrorSatisfies(e -> assertThat(((LockAcquisitionException) e).reason())
                        .isEqualTo(LockAcquisitionException.Reason.BUSY))
                .verify(WAIT);
        assertThatThrownBy(() -> patient.withAcquireTimeout(Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("acquireTimeout");
        assertThatThrownBy(() -> patient.withAcquireTimeout(null)).isInstanceOf(NullPointerException.class);
        holder.dispose();
        eventually(() -> !isLocked("a"));
        StepVerifier.create(patient.withAcquireTimeout(Duration.ZERO).withLock("a", TTL, Mono.just("x")))
                .expectNext("x").verifyComplete();
    }

    @Test
    void acquisitionsPastMaxPendingAreRefusedWithTheirReasonAndNothingIsSent() {
        Disposable holder = lock().withLock("a", TTL, Mono.never()).subscribe();
        eventually(() -> isLocked("a"));
        RecordingListener events = new RecordingListener();
        ReactiveLock bounded = newLock(LockOptions.builder().maxPendingAcquisitions(1).listener(events).build());
        Disposable waiting = bounded.withLock("a", TTL, Mono.just(1)).subscribe();
        StepVerifier.create(bounded.withLock("b", TTL, Mono.just(2)))
                .expectErrorSatisfies(e -> {
                    assertThat(e).isInstanceOf(TooManyPendingAcquisitionsException.class);
                    assertThat(((LockAcquisitionException) e).reason())
                            .isEqualTo(LockAcquisitionException.Reason.TOO_MANY_PENDING);
                    assertThat(((LockAcquisitionException) e).attempts()).isZero();
                })
                .verify(WAIT);
        assertThat(isLocked("b")).isFalse();
        assertThat(events.failures).singleElement().isInstanceOf(TooManyPendingAcquisitionsException.class);
        waiting.dispose();
        holder.dispose();
        // The slot is given back when the waiter leaves: the bound counts acquisitions in progress.
        StepVerifier.create(bounded.withLock("b", TTL, Mono.just(2))).expectNext(2).verifyComplete();
    }

    @Test
    void listenerHearsABodyThatCompletesAsAcquiredThenReleased() {
        RecordingListener events = new RecordingListener();
        StepVerifier.create(listenedTo(events).withLock("a", TTL, Mono.just(1))).expectNext(1).verifyComplete();
        assertThat(events.list).containsExactly("acquired a", "released a");
    }

    @Test
    void listenerHearsABusyLockAsAnAcquireFailureWithoutCause() {
        RecordingListener events = new RecordingListener();
        ReactiveLock lock = listenedTo(events);
        Sinks.Empty<Void> finish = Sinks.empty();
        Disposable holder = lock.withLock("a", TTL, finish.asMono()).subscribe();
        eventually(() -> events.list.contains("acquired a"));

        StepVerifier.create(lock.withLock("a", TTL, Mono.just(1))).verifyError(LockAcquisitionException.class);
        assertThat(events.failures).singleElement()
                .satisfies(e -> assertThat(e).isInstanceOf(LockAcquisitionException.class).hasNoCause())
                .satisfies(e -> assertThat(((LockAcquisitionException) e).reason())
                        .isEqualTo(LockAcquisitionException.Reason.BUSY));

        finish.tryEmitEmpty();
        eventually(() -> events.list.contains("released a"));
        assertThat(events.list).containsExactly("acquired a", "acquireFailed a", "released a");
        holder.dispose();
    }

    @Test
    void listenerHearsRejectedArgumentsBeforeTheyAreThrown() {
        RecordingListener events = new RecordingListener();
        ReactiveLock lock = listenedTo(events);
        assertThatThrownBy(() -> lock.withLock("", TTL, Mono.just(1))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> lock.withLock(null, TTL, Mono.just(1))).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> lock.withLock("a", Duration.ZERO, Mono.just(1))).isInstanceOf(IllegalArgumentException.class);
        assertThat(events.list).containsExactly("acquireFailed ", "acquireFailed null", "acquireFailed a");
        assertThat(events.failures).extracting(Object::getClass).containsExactly(
                IllegalArgumentException.class, NullPointerException.class, IllegalArgumentException.class);
    }

    @Test
    void listenerHearsRenewalsWhileTheBodyRuns() {
        RecordingListener events = new RecordingListener();
        Sinks.Empty<Void> finish = Sinks.empty();
        Disposable holder = listenedTo(events).withLock("a", Duration.ofMillis(300), finish.asMono()).subscribe();
        eventually(() -> events.list.stream().filter("renewed a"::equals).count() >= 2);
        finish.tryEmitEmpty();
        eventually(() -> events.list.contains("released a"));
        assertThat(events.list).first().isEqualTo("acquired a");
        assertThat(events.list).last().isEqualTo("released a");
        holder.dispose();
    }

    @Test
    void listenerHearsALostLeaseBeforeTheRelease() {
        RecordingListener events = new RecordingListener();
        StepVerifier.create(listenedTo(events).withLock("a", Duration.ofMillis(300), Mono.never()))
                .expectSubscription()
                .then(() -> eventually(() -> events.list.contains("acquired a")))
                .then(() -> expireLease("a"))
                .expectError(LockLostException.class)
                .verify(WAIT);
        assertThat(events.list).filteredOn(e -> !e.startsWith("renewed"))
                .containsExactly("acquired a", "lost a", "released a");
        assertThat(events.lost).singleElement().isInstanceOf(LockLostException.class);
    }

    @Test
    void listenerHearsTheMaximumLeaseTimeAsALostLease() {
        RecordingListener events = new RecordingListener();
        ReactiveLock capped = newLock(LockOptions.builder().maxLeaseTime(Duration.ofMillis(2500)).listener(events).build());
        StepVerifier.create(capped.withLock("a", Duration.ofSeconds(2), Mono.never()))
                .expectError(LeaseTimeExceededException.class)
                .verify(WAIT);
        assertThat(events.list).filteredOn(e -> !e.startsWith("renewed"))
                .containsExactly("acquired a", "lost a", "released a");
        assertThat(events.lost).singleElement().isInstanceOf(LeaseTimeExceededException.class);
    }

    @Test
    void listenerHearsCancellingAHeldLockAsReleased() {
        RecordingListener events = new RecordingListener();
        StepVerifier.create(listenedTo(events).withLock("a", TTL, Mono.never()))
                .expectSubscription()
                .then(() -> eventually(() -> events.list.contains("acquired a")))
                .thenCancel()
                .verify(WAIT);
        assertThat(events.list).containsExactly("acquired a", "released a");
    }

    @Test
    void aListenerThatThrowsDoesNotChangeWhatTheCallerSees() {
        LockListener throwing = new LockListener() {
            @Override
            public void acquired(String name, Duration waited) {
                throw new IllegalStateException("listener bug");
            }

            @Override
            public void acquireFailed(String name, Throwable error, Duration waited) {
                throw new IllegalStateException("listener bug");
            }

            @Override
            public void released(String name, Duration held) {
                throw new IllegalStateException("listener bug");
            }
        };
        ReactiveLock lock = newLock(LockOptions.builder().listener(throwing).build());
        StepVerifier.create(lock.withLock("a", TTL, Mono.just(1))).expectNext(1).verifyComplete();
        assertThat(isLocked("a")).as("released").isFalse();
        assertThatThrownBy(() -> lock.withLock("", TTL, Mono.just(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 to 512");
    }

    // ---- Reentrancy (ReentrantReactiveLock over this implementation) ----

    /** Fails at once on a busy lock: a nested call that waits for itself fails instead of hanging until a timeout. */
    private ReactiveLock impatient() {
        return newLock(LockOptions.builder().acquireTimeout(Duration.ZERO).build());
    }

    @Test
    void reentrantWrapperRejectsBadNamesWhenCalledAsTheWrappedLockDoes() {
        ReactiveLock locks = ReentrantReactiveLock.of(lock());
        assertThatThrownBy(() -> locks.withLock(null, TTL, Mono.just(1)))
                .isInstanceOf(NullPointerException.class).hasMessage("name");
        assertThatThrownBy(() -> locks.withLock("", TTL, Mono.just(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 to 512");
        assertThatThrownBy(() -> locks.withLockMany("a\uD800b", TTL, lease -> Mono.just(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("surrogate");
    }

    @Test
    void reentrantNestedWithLockForTheSameNameInTheSameChainJoinsTheHeldLeaseAcrossThreadHops() {
        ReactiveLock locks = ReentrantReactiveLock.of(impatient());
        StepVerifier.create(locks.withLock("a", TTL, outer -> Mono.just(outer)
                        .publishOn(Schedulers.boundedElastic())
                        .flatMap(o -> locks.withLock("a", TTL, inner -> Mono.just(List.of(outer, inner))))))
                .assertNext(leases -> {
                    assertThat(leases.get(1).token()).isEqualTo(leases.get(0).token());
                    assertThat(leases.get(1)).isSameAs(leases.get(0));
                })
                .verifyComplete();
        assertThat(isLocked("a")).isFalse();
    }

    @Test
    void withoutReentrancyTheSameNestedWithLockWaitsForItselfAndFails() {
        ReactiveLock locks = impatient();
        StepVerifier.create(locks.withLock("a", TTL, outer -> Mono.just(outer)
                        .publishOn(Schedulers.boundedElastic())
                        .flatMap(o -> locks.withLock("a", TTL, inner -> Mono.just(inner)))))
                .expectError(LockAcquisitionException.class)
                .verify(WAIT);
    }

    @Test
    void reentrantLockTakenByAnUnrelatedChainOnTheSameThreadIsNotJoined() throws Exception {
        ReactiveLock locks = ReentrantReactiveLock.of(impatient());
        AtomicReference<Thread> outerThread = new AtomicReference<>();
        AtomicReference<Thread> unrelatedThread = new AtomicReference<>();
        CompletableFuture<String> unrelated = locks.withLock("a", TTL, Mono.fromCallable(() -> {
                    outerThread.set(Thread.currentThread());
                    // A new chain, subscribed on the outer body's thread but without its context.
                    return locks.withLock("a", TTL, Mono.just("joined"))
                            .doOnSubscribe(s -> unrelatedThread.set(Thread.currentThread()))
                            .toFuture();
                }))
                .block(WAIT);
        assertThat(unrelatedThread.get()).isSameAs(outerThread.get());
        assertThatThrownBy(unrelated::get).isInstanceOf(ExecutionException.class)
                .hasCauseInstanceOf(LockAcquisitionException.class);
    }

    @Test
    void reentrantNamesHeldFurtherOutStayJoinableInsideANestedLockOfAnotherName() {
        ReactiveLock locks = ReentrantReactiveLock.of(impatient());
        StepVerifier.create(locks.withLock("a", TTL, a -> locks.withLock("b", TTL, b -> Mono.zip(
                        locks.withLock("a", TTL, again -> Mono.just(again == a)),
                        lockedNow("b")))))
                .assertNext(joinedAndHeld -> assertThat(joinedAndHeld.getT1() && joinedAndHeld.getT2()).isTrue())
                .verifyComplete();
        assertThat(isLocked("a") || isLocked("b")).isFalse();
    }

    @Test
    void reentrantInnerCompletingFailingOrBeingCancelledLeavesTheOuterLockHeld() {
        ReactiveLock locks = ReentrantReactiveLock.of(lock());
        PublisherProbe<String> cancelledBody = PublisherProbe.of(Mono.never());
        Mono<String> completes = locks.withLock("a", TTL, Mono.just("inner"));
        Mono<String> fails = locks.withLock("a", TTL, Mono.<String>error(new IllegalStateException("inner"))).onErrorReturn("failed");
        Mono<String> cancelled = Mono.firstWithSignal(locks.withLock("a", TTL, cancelledBody.mono()), Mono.just("cancelled"));
        StepVerifier.create(locks.withLock("a", TTL, Flux.concat(completes, fails, cancelled)
                        .concatMap(outcome -> lockedNow("a").map(held -> outcome + " held=" + held))
                        .collectList()))
                .expectNext(List.of("inner held=true", "failed held=true", "cancelled held=true"))
                .verifyComplete();
        cancelledBody.assertWasSubscribed();
        cancelledBody.assertWasCancelled();
        assertThat(isLocked("a")).as("the outer call released").isFalse();
    }

    @Test
    void reentrantInnerSubscribedAfterTheOuterLeaseWasLostFailsWithLockLostException() {
        ReactiveLock locks = ReentrantReactiveLock.of(lock());
        AtomicReference<ContextView> outerContext = new AtomicReference<>();
        StepVerifier.create(locks.withLock("a", Duration.ofMillis(300), Mono.deferContextual(context -> {
                    outerContext.set(context);
                    return Mono.never();
                })))
                .expectSubscription()
                .then(() -> eventually(() -> isLocked("a")))
                .then(() -> expireLease("a"))
                .expectError(LockLostException.class)
                .verify(WAIT);
        // Work that escaped the outer chain with its context, as a fire-and-forget subscribe() would.
        PublisherProbe<String> innerBody = PublisherProbe.of(Mono.just("unprotected"));
        StepVerifier.create(locks.withLock("a", TTL, innerBody.mono()).contextWrite(outerContext.get()))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockLostException.class)
                        .hasMessageContaining("no longer holds it"))
                .verify(WAIT);
        innerBody.assertWasNotSubscribed();
        assertThat(isLocked("a")).isFalse();
    }

}
