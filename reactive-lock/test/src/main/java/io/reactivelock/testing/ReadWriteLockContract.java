package io.reactivelock.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveReadWriteLock;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.publisher.PublisherProbe;

/**
 * What every {@link ReactiveReadWriteLock} does, written once and run against the Redis lock
 * ({@code ReadWriteRedisContractTest}) and the in-memory double ({@code ReadWriteInMemoryContractTest}).
 * Parameterised tests take {@code write}: true for the write lock, false for the read lock.
 *
 * <p>Published in reactive-lock-test: a user's own {@code ReactiveReadWriteLock} decorator can run it by
 * extending this class.
 */
public abstract class ReadWriteLockContract {

    static final Duration TTL = Duration.ofSeconds(30);
    static final Duration WAIT = Duration.ofSeconds(10);

    /** A new lock of the implementation under test, on the same names as the others of the test; closed by the subclass. */
    protected abstract ReactiveReadWriteLock newLock(LockOptions options);

    /** How many live readers hold {@code name} now, read from the store. Blocking; test thread only. */
    protected abstract int readers(String name);

    /** Whether a writer holds {@code name} now. Blocking. */
    protected abstract boolean isWriteLocked(String name);

    /** How many live writers wait for {@code name} now. Blocking. */
    protected abstract int writersWaiting(String name);

    /** Ends every lease on {@code name} as if their TTL had run out unnoticed. Blocking. */
    protected abstract void expire(String name);

    /** Takes the read lock for a reader that dies at once, if a reader may enter. Blocking. */
    protected abstract boolean readElsewhere(String name, Duration ttl);

    /** Takes the write lock for a writer that dies at once, if it is free. Blocking. */
    protected abstract boolean writeElsewhere(String name, Duration ttl);

    /** The names that have anything left in the store but their writers' fencing record. Blocking. */
    protected abstract Set<String> namesLeft();

    /** Bodies running with their renewal watchdog now, over every lock of the test. */
    protected abstract int activeLeases();

    private ReactiveReadWriteLock lock;

    /** The lock most tests use: default options, but a 5 s acquire timeout. */
    ReactiveReadWriteLock lock() {
        if (lock == null) {
            lock = newLock(LockOptions.builder().acquireTimeout(Duration.ofSeconds(5)).build());
        }
        return lock;
    }

    /** A lock that tries once. */
    private ReactiveReadWriteLock once() {
        return newLock(LockOptions.builder().acquireTimeout(Duration.ZERO).build());
    }

    private static <T> Mono<T> with(ReactiveReadWriteLock lock, boolean write, String name, Duration ttl,
            Function<? super LockLease, ? extends Mono<T>> body) {
        return write ? lock.withWriteLock(name, ttl, body) : lock.withReadLock(name, ttl, body);
    }

    /** Waits for what the lock does in the background, up to {@link #WAIT}. */
    private static void eventually(Callable<Boolean> condition) {
        Eventually.until(WAIT, condition);
    }

    private boolean isHeld(String name) {
        return isWriteLocked(name) || readers(name) > 0;
    }

    /** What a body sees of the lock: "w" for a writer alone, "r<count>" for readers alone. */
    private Mono<String> holdersNow(String name) {
        return Mono.fromCallable(() -> (isWriteLocked(name) ? "w" : "") + (readers(name) > 0 ? "r" + readers(name) : ""))
                .subscribeOn(Schedulers.boundedElastic());
    }

    private static void assertBusy(ReactiveReadWriteLock once, boolean write, String name) {
        PublisherProbe<String> body = PublisherProbe.of(Mono.just("x"));
        StepVerifier.create(with(once, write, name, TTL, lease -> body.mono()))
                .expectErrorSatisfies(e -> assertThat(((LockAcquisitionException) e).reason())
                        .isEqualTo(LockAcquisitionException.Reason.BUSY))
                .verify(WAIT);
        body.assertWasNotSubscribed();
    }

    // ---- Outcomes of the body ----

    @ParameterizedTest(name = "write={0}")
    @ValueSource(booleans = {false, true})
    void aBodyRunsAloneOrAsOneReaderAndTheLockIsReleasedBeforeItsValue(boolean write) {
        RecordingListener events = new RecordingListener();
        ReactiveReadWriteLock listened = newLock(LockOptions.builder().listener(events).build());
        StepVerifier.create(with(listened, write, "a", TTL, lease -> holdersNow("a")))
                .expectNext(write ? "w" : "r1")
                .verifyComplete();
        assertThat(isHeld("a")).as("released before the value was emitted").isFalse();
        assertThat(events.list).containsExactly("acquired a", "released a");
    }

    @ParameterizedTest(name = "write={0}")
    @ValueSource(booleans = {false, true})
    void aBodyErrorIsPropagatedUnchangedAndTheLockReleased(boolean write) {
        IllegalStateException boom = new IllegalStateException("boom");
        StepVerifier.create(with(lock(), write, "a", TTL, lease -> Mono.error(boom)))
                .expectErrorSatisfies(e -> assertThat(e).isSameAs(boom))
                .verify(WAIT);
        assertThat(isHeld("a")).isFalse();
    }

    @ParameterizedTest(name = "write={0}")
    @ValueSource(booleans = {false, true})
    void cancellingWhileTheBodyRunsCancelsItAndReleases(boolean write) {
        PublisherProbe<Object> body = PublisherProbe.of(Mono.never());
        Disposable running = with(lock(), write, "a", TTL, lease -> body.mono()).subscribe();
        // The lock is taken in the store before the grant reaches the caller, which then runs the body.
        eventually(body::wasSubscribed);
        assertThat(isHeld("a")).isTrue();
        running.dispose();
        body.assertWasCancelled();
        eventually(() -> !isHeld("a"));
    }

    // ---- Readers and writers ----

    /** Neither upgrade nor downgrade: the other mode asked for inside a held lock waits for itself, then fails busy. */
    @ParameterizedTest(name = "outer write lock: {0}")
    @ValueSource(booleans = {true, false})
    void theOtherModeOfAHeldNameTakenInsideItWaitsForItselfUntilTheAcquireTimeout(boolean outerWrite) {
        ReactiveReadWriteLock impatient = newLock(LockOptions.builder().acquireTimeout(Duration.ofMillis(300)).build());
        PublisherProbe<String> inner = PublisherProbe.of(Mono.just("inner"));
        StepVerifier.create(with(impatient, outerWrite, "a", TTL, outer -> Mono.just(outer)
                        .publishOn(Schedulers.boundedElastic())
                        .flatMap(o -> with(impatient, !outerWrite, "a", TTL, lease -> inner.mono()))))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockAcquisitionException.class)
                        .satisfies(x -> assertThat(((LockAcquisitionException) x).reason())
                                .isEqualTo(LockAcquisitionException.Reason.BUSY)))
                .verify(WAIT);
        inner.assertWasNotSubscribed();
        eventually(() -> !isHeld("a"));
    }

    @Test
    void manyReadersHoldAtOnceAndAWriterWaitsForTheLastOfThem() throws Exception {
        List<Sinks.Empty<Void>> readerDone = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Sinks.Empty<Void> done = Sinks.empty();
            readerDone.add(done);
            lock().withReadLock("a", TTL, done.asMono()).subscribe();
        }
        eventually(() -> readers("a") == 3);
        assertBusy(once(), true, "a");
        CompletableFuture<String> writer = lock().withWriteLock("a", TTL, holdersNow("a")).toFuture();
        readerDone.get(0).tryEmitEmpty();
        readerDone.get(1).tryEmitEmpty();
        eventually(() -> readers("a") == 1);
        assertThat(writer).as("one reader still holds").isNotDone();
        readerDone.get(2).tryEmitEmpty();
        assertThat(writer.get(WAIT.toSeconds(), TimeUnit.SECONDS)).as("the writer is alone").isEqualTo("w");
    }

    @Test
    void aWriterKeepsOutReadersAndWriters() throws Exception {
        Sinks.Empty<Void> writerDone = Sinks.empty();
        lock().withWriteLock("a", TTL, writerDone.asMono()).subscribe();
        eventually(() -> isWriteLocked("a"));
        assertBusy(once(), false, "a");
        assertBusy(once(), true, "a");
        CompletableFuture<String> reader = lock().withReadLock("a", TTL, holdersNow("a")).toFuture();
        writerDone.tryEmitEmpty();
        assertThat(reader.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo("r1");
    }

    @Test
    void aWaitingWriterKeepsNewReadersOutAndGetsTheLockBeforeThem() throws Exception {
        Sinks.Empty<Void> firstReaderDone = Sinks.empty();
        Disposable firstReader = lock().withReadLock("a", TTL, firstReaderDone.asMono()).subscribe();
        eventually(() -> readers("a") == 1);
        Sinks.Empty<Void> writerDone = Sinks.empty();
        PublisherProbe<Void> writerBody = PublisherProbe.of(writerDone.asMono());
        Disposable writer = lock().withWriteLock("a", TTL, writerBody.mono()).subscribe();
        eventually(() -> writersWaiting("a") == 1);

        // Only a reader holds the lock, yet a reader arriving now is refused: the writer waits.
        assertBusy(once(), false, "a");
        PublisherProbe<String> laterReaderBody = PublisherProbe.of(Mono.just("later reader"));
        CompletableFuture<String> laterReader = lock().withReadLock("a", TTL, laterReaderBody.mono()).toFuture();
        firstReaderDone.tryEmitEmpty();
        eventually(writerBody::wasSubscribed);
        laterReaderBody.assertWasNotSubscribed();
        writerDone.tryEmitEmpty();
        assertThat(laterReader.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo("later reader");
        firstReader.dispose();
        writer.dispose();
    }

    @Test
    void aWaitingWriterThatGivesUpLetsTheReadersIn() throws Exception {
        Disposable reader = lock().withReadLock("a", TTL, Mono.never()).subscribe();
        eventually(() -> readers("a") == 1);
        // A 10 s waiter lease (5 x the longest backoff step): the reader, which waits 5 s at most,
        // gets in only if the writer that gives up takes itself out of the waiting writers.
        ReactiveReadWriteLock slowPolling = newLock(LockOptions.builder().backoff(Duration.ofMillis(5), Duration.ofSeconds(2)).build());
        Disposable writer = slowPolling.withWriteLock("a", TTL, Mono.never()).subscribe();
        eventually(() -> writersWaiting("a") == 1);
        CompletableFuture<String> laterReader = lock().withReadLock("a", TTL, holdersNow("a")).toFuture();
        writer.dispose();
        assertThat(laterReader.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo("r2");
        assertThat(writersWaiting("a")).isZero();
        reader.dispose();
    }

    @Test
    void writersGetIncreasingFencingTokensAndReadersNone() {
        Mono<LockLease> write = lock().withWriteLock("a", TTL, Mono::just);
        Mono<LockLease> read = lock().withReadLock("a", TTL, Mono::just);
        LockLease first = write.block(WAIT);
        LockLease reader = read.block(WAIT);
        LockLease second = write.block(WAIT);
        assertThat(reader.hasFencingToken()).isFalse();
        assertThat(first.hasFencingToken()).isTrue();
        assertThat(second.fencingToken()).isGreaterThan(first.fencingToken());
        assertThat(List.of(first.name(), reader.name(), second.name())).containsOnly("a");
    }

    // ---- Leases ----

    @ParameterizedTest(name = "write={0}")
    @ValueSource(booleans = {false, true})
    void renewalKeepsTheLockWhileTheBodyOutlivesTheTtl(boolean write) {
        // Renewals every third of a 2 s TTL leave ~1.3 s of slack for a late timer on a loaded machine
        // (a 1 s TTL once lost a reader's lease to a 0.7 s timer stall in CI).
        StepVerifier.create(with(lock(), write, "a", Duration.ofSeconds(2),
                        lease -> Mono.delay(Duration.ofMillis(5000)).then(holdersNow("a"))))
                .expectNext(write ? "w" : "r1")
                .verifyComplete();
    }

    @ParameterizedTest(name = "write={0}")
    @ValueSource(booleans = {false, true})
    void aLostLeaseCancelsTheBodyWithLockLostExceptionAndTheListenerHearsIt(boolean write) {
        RecordingListener events = new RecordingListener();
        // A lease of TTL (30 s) renewed every 100 ms: the loss is found by a renewal within WAIT (10 s), not by the lease running out.
        ReactiveReadWriteLock listened = newLock(LockOptions.builder().listener(events).renewalInterval(Duration.ofMillis(100)).build());
        PublisherProbe<Object> body = PublisherProbe.of(Mono.never());
        StepVerifier.create(with(listened, write, "a", TTL, lease -> body.mono()))
                .expectSubscription()
                .then(() -> eventually(() -> isHeld("a")))
                .then(() -> expire("a"))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockLostException.class).hasMessageContaining("'a'"))
                .verify(WAIT);
        body.assertWasCancelled();
        assertThat(events.list).filteredOn(e -> !e.startsWith("renewed")).containsExactly("acquired a", "lost a", "released a");
        StepVerifier.create(once().withWriteLock("a", TTL, Mono.just("next"))).expectNext("next").verifyComplete();
    }

    @Test
    void aDeadReaderStopsKeepingWritersOutAfterItsTtlWhileAnotherReaderStillHolds() throws Exception {
        Sinks.Empty<Void> liveDone = Sinks.empty();
        lock().withReadLock("a", TTL, liveDone.asMono()).subscribe();
        eventually(() -> readers("a") == 1);
        assertThat(readElsewhere("a", Duration.ofSeconds(1))).isTrue();
        assertThat(readers("a")).isEqualTo(2);
        eventually(() -> readers("a") == 1);
        // The live reader leaves: the writer enters at once, not when the live reader's 30 s lease would have ended.
        liveDone.tryEmitEmpty();
        StepVerifier.create(lock().withWriteLock("a", TTL, holdersNow("a"))).expectNext("w").verifyComplete();
    }

    @Test
    void aDeadWritersLockComesBackAfterItsTtlAndNotBefore() {
        long start = System.nanoTime();
        assertThat(writeElsewhere("a", Duration.ofSeconds(1))).isTrue();
        StepVerifier.create(lock().withReadLock("a", TTL, Mono.fromCallable(System::nanoTime)))
                .assertNext(entered -> assertThat(Duration.ofNanos(entered - start))
                        // The store's clock counts whole milliseconds: 10 ms of slack for its rounding.
                        .isGreaterThanOrEqualTo(Duration.ofMillis(990)))
                .verifyComplete();
    }

    // ---- Arguments ----

    @ParameterizedTest(name = "write={0}")
    @ValueSource(booleans = {false, true})
    void theLocksArgumentChecksApplyAndAreHeard(boolean write) {
        RecordingListener events = new RecordingListener();
        ReactiveReadWriteLock listened = newLock(LockOptions.builder().listener(events).build());
        assertThatThrownBy(() -> with(listened, write, null, TTL, lease -> Mono.just(1)))
                .isInstanceOf(NullPointerException.class).hasMessage("name");
        assertThatThrownBy(() -> with(listened, write, "a", Duration.ofMillis(99), lease -> Mono.just(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 100 ms");
        assertThatThrownBy(() -> with(listened, write, "a", TTL, null))
                .isInstanceOf(NullPointerException.class).hasMessage("body");
        assertThat(events.failures).hasSize(3);
    }

    // ---- The exclusion checker ----

    private static final int BODIES = 64;
    private static final int WRITER = 1_000;

    /** Readers inside plus {@link #WRITER} per writer inside, counted by the bodies themselves. */
    private final AtomicInteger inside = new AtomicInteger();
    private final List<String> violations = new CopyOnWriteArrayList<>();
    private final List<Long> writerFencesInEntryOrder = new CopyOnWriteArrayList<>();

    /**
     * A body: a writer must enter an empty lock, a reader one without a writer. It hops threads
     * twice around a short wait and leaves before its release.
     */
    private Mono<Integer> checkedBody(boolean write, long fence) {
        return Mono.defer(() -> {
            int before = inside.getAndAdd(write ? WRITER : 1);
            if (write) {
                writerFencesInEntryOrder.add(fence);
            }
            if (write ? before != 0 : before >= WRITER) {
                violations.add((write ? "a writer" : "a reader") + " entered with " + before / WRITER + " writer(s) and "
                        + before % WRITER + " reader(s) inside");
            }
            return Mono.just(1)
                    .publishOn(Schedulers.parallel())
                    .delayElement(Duration.ofMillis(2))
                    .publishOn(Schedulers.parallel())
                    // doOnTerminate runs before completion travels on to the release; doFinally would run after it.
                    .doOnTerminate(() -> inside.addAndGet(write ? -WRITER : -1));
        });
    }

    /** Runs {@link #BODIES} bodies at once, one in four a writer, each through {@code guard} (the lock, or nothing). */
    private long runWorkload(BiFunction<Integer, Function<LockLease, Mono<Integer>>, Mono<Integer>> guard) {
        return Flux.range(0, BODIES)
                .flatMap(i -> guard.apply(i, lease -> checkedBody(i % 4 == 0,
                        lease != null && lease.hasFencingToken() ? lease.fencingToken() : 0)), BODIES)
                .count()
                .block(Duration.ofMinutes(2));
    }

    @Test
    void writersAreAloneReadersNeverMeetAWriterAndWritersEnterInFencingOrder() {
        // Three instances: three clients of one store, as three processes would be.
        LockOptions patient = LockOptions.builder().acquireTimeout(Duration.ofMinutes(1)).build();
        List<ReactiveReadWriteLock> clients = List.of(newLock(patient), newLock(patient), newLock(patient));
        long done = runWorkload((i, body) -> with(clients.get(i % clients.size()), i % 4 == 0, "shared",
                Duration.ofSeconds(5), body));
        assertThat(done).as("bodies that ran").isEqualTo(BODIES);
        assertThat(violations).isEmpty();
        assertThat(writerFencesInEntryOrder).hasSize(BODIES / 4).isSorted().doesNotHaveDuplicates();
    }

    @Test
    void withoutTheLockTheCheckerSeesWritersMeetingOthers() {
        runWorkload((i, body) -> body.apply(null));
        assertThat(violations).as("negative control: the checker must see the overlaps when nothing prevents them")
                .isNotEmpty();
    }

    // ---- Cancel storm ----

    @Test
    void aCancelStormLeavesNothingLockedNothingWaitingAndNoRenewalRunningWithinTenSeconds() {
        // Backoff up to 3 s: a waiting writer's registration lives 15 s (its waiter lease), so one
        // left behind by a late cancel is still there when the names are checked (within 10 s).
        ReactiveReadWriteLock storm = newLock(LockOptions.builder()
                .backoff(Duration.ofMillis(1), Duration.ofSeconds(3)).renewalInterval(Duration.ofMillis(20)).build());
        AtomicInteger bodiesCut = new AtomicInteger();
        // Cancels within 3 ms, within 250 ms, and 1 ms into a body (see CancelStorm): not only
        // early ones, since a storm whose cancels all came before their grants would hold every
        // name with abandoned grants and cut no body.
        Flux.range(0, 5_000)
                .flatMap(i -> {
                    ThreadLocalRandom random = ThreadLocalRandom.current();
                    return CancelStorm.acquisition(i, 60, 250, bodiesCut, body -> with(storm, random.nextInt(4) == 0,
                                    "storm:" + random.nextInt(16), Duration.ofMinutes(1), lease -> body))
                            .onErrorResume(LockAcquisitionException.class, e -> Mono.empty());
                }, 64)
                .then()
                .block(Duration.ofMinutes(2));
        // The TTL is a minute: what is gone within 10 s was released, not expired. Not 1 s: with the
        // machine busy (another build beside this one) the storm's last background releases were
        // still on their way after 1 s, as in the semaphore's and the multi-lock's storms.
        Eventually.untilAsserted(Duration.ofSeconds(10), () -> {
            assertThat(activeLeases()).as("renewals running").isZero();
            assertThat(namesLeft()).as("names with holders or waiting writers left").isEmpty();
        });
        assertThat(bodiesCut).as("cancels also hit running bodies").hasPositiveValue();
    }
}
