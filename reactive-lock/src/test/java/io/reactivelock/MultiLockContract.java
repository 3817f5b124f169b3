package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.reactivelock.support.CancelStorm;
import io.reactivelock.support.CriticalSectionHistory;
import io.reactivelock.support.RecordingListener;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.publisher.PublisherProbe;

/**
 * What every {@link ReactiveMultiLock} does, written once and run against the Redis multi-lock
 * ({@code MultiLockRedisContractTest}) and the in-memory double ({@code MultiLockInMemoryContractTest}).
 */
abstract class MultiLockContract {

    static final Duration TTL = Duration.ofSeconds(30);
    static final Duration WAIT = Duration.ofSeconds(10);
    static final List<String> ABC = List.of("a", "b", "c");

    /** A new multi-lock of the implementation under test, on the same names as the others of the test; closed by the subclass. */
    protected abstract ReactiveMultiLock newLock(LockOptions options);

    /** Whether {@code name} is held now, read from the store. Blocking; test thread only. */
    protected abstract boolean isLocked(String name);

    /** Ends the lease on {@code name} as if its TTL had run out unnoticed. Blocking. */
    protected abstract void expire(String name);

    /** Takes {@code name} for a holder that dies at once: nobody renews nor releases it. Blocking. */
    protected abstract boolean lockElsewhere(String name, Duration ttl);

    /** The names that have anything left in the store but their fencing record. Blocking. */
    protected abstract Set<String> namesLeft();

    /** Bodies running with their renewal watchdog now, over every lock of the test. */
    protected abstract int activeLeases();

    private ReactiveMultiLock lock;

    /** The lock most tests use: default options, but a 5 s acquire timeout. */
    ReactiveMultiLock lock() {
        if (lock == null) {
            lock = newLock(LockOptions.builder().acquireTimeout(Duration.ofSeconds(5)).build());
        }
        return lock;
    }

    /** A lock that tries once. */
    ReactiveMultiLock once() {
        return newLock(LockOptions.builder().acquireTimeout(Duration.ZERO).build());
    }

    static ConditionFactory eventually() {
        return await().atMost(WAIT).pollInterval(Duration.ofMillis(10));
    }

    /** Which of {@code names} are held, read from a body: hops off the reactive thread to ask. */
    private Mono<List<String>> heldNow(List<String> names) {
        return Mono.fromCallable(() -> names.stream().filter(this::isLocked).toList()).subscribeOn(Schedulers.boundedElastic());
    }

    // ---- Outcomes of the body ----

    @Test
    void aBodyRunsWithEveryNameHeldAndTheyAreAllReleasedBeforeItsValue() {
        RecordingListener events = new RecordingListener();
        ReactiveMultiLock listened = newLock(LockOptions.builder().listener(events).build());
        StepVerifier.create(listened.withLocks(List.of("c", "a", "b"), TTL, heldNow(ABC)))
                .expectNext(ABC)
                .verifyComplete();
        assertThat(ABC).as("released before the value was emitted").noneMatch(this::isLocked);
        assertThat(events.list).containsExactly("acquired [a, b, c]", "released [a, b, c]");
    }

    @Test
    void aBodyErrorIsPropagatedUnchangedAndEveryNameReleased() {
        IllegalStateException boom = new IllegalStateException("boom");
        StepVerifier.create(lock().withLocks(ABC, TTL, Mono.error(boom)))
                .expectErrorSatisfies(e -> assertThat(e).isSameAs(boom))
                .verify(WAIT);
        assertThat(ABC).noneMatch(this::isLocked);
    }

    @Test
    void cancellingWhileTheBodyRunsCancelsItAndReleasesEveryName() {
        PublisherProbe<Object> body = PublisherProbe.of(Mono.never());
        Disposable running = lock().withLocks(ABC, TTL, body.mono()).subscribe();
        eventually().until(() -> ABC.stream().allMatch(this::isLocked));
        running.dispose();
        body.assertWasCancelled();
        eventually().until(() -> ABC.stream().noneMatch(this::isLocked));
    }

    @Test
    void theLeaseListsTheNamesSortedAndGivesEachAFencingTokenAboveEveryEarlierHoldersOfIt() {
        MultiLockLease alone = lock().withLocks(List.of("b"), TTL, Mono::just).block(WAIT);
        MultiLockLease first = lock().withLocks(List.of("c", "b", "a"), TTL, Mono::just).block(WAIT);
        MultiLockLease second = lock().withLocks(List.of("d", "a"), TTL, Mono::just).block(WAIT);
        assertThat(first.names()).containsExactly("a", "b", "c");
        assertThat(first.token()).isNotEqualTo(second.token());
        assertThat(first.remaining()).isPositive().isLessThanOrEqualTo(TTL);
        assertThat(first.fencingToken("b")).as("b, after its holder alone").isGreaterThan(alone.fencingToken("b"));
        assertThat(second.fencingToken("a")).as("a, after the three").isGreaterThan(first.fencingToken("a"));
        assertThat(second.fencingToken("d")).isPositive();
        assertThatThrownBy(() -> first.fencingToken("d"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'d' is not one of the names held");
    }

    // ---- All or none ----

    @Test
    void oneNameHeldElsewhereRefusesTheAttemptAndNoneOfTheOthersIsTaken() {
        assertThat(lockElsewhere("b", TTL)).isTrue();
        PublisherProbe<String> body = PublisherProbe.of(Mono.just("x"));
        StepVerifier.create(once().withLocks(List.of("c", "b", "a"), TTL, body.mono()))
                .expectErrorSatisfies(e -> {
                    assertThat(e).isInstanceOf(LockAcquisitionException.class)
                            .hasMessageContaining("'[a, b, c]'").hasMessageContaining("'b' stayed busy");
                    assertThat(((LockAcquisitionException) e).reason()).isEqualTo(LockAcquisitionException.Reason.BUSY);
                })
                .verify(WAIT);
        body.assertWasNotSubscribed();
        assertThat(isLocked("a")).as("a").isFalse();
        assertThat(isLocked("c")).as("c").isFalse();
        assertThat(namesLeft()).as("what the refused attempt left").containsExactly("b");
    }

    @Test
    void aWaitingMultiLockHoldsNoneOfItsNamesAndGetsThemAllOnceTheBusyOneIsFree() throws Exception {
        Sinks.Empty<Void> firstDone = Sinks.empty();
        Disposable first = lock().withLocks(List.of("b"), TTL, firstDone.asMono()).subscribe();
        eventually().until(() -> isLocked("b"));
        CompletableFuture<List<String>> waiter = lock().withLocks(ABC, TTL, heldNow(ABC)).toFuture();
        // While it waits, the names it does not get are free for anyone.
        StepVerifier.create(once().withLocks(List.of("c", "a"), TTL, Mono.just("a and c are free")))
                .expectNext("a and c are free")
                .verifyComplete();
        assertThat(waiter).isNotDone();
        firstDone.tryEmitEmpty();
        assertThat(waiter.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(ABC);
        first.dispose();
    }

    // ---- Exclusion whatever the order of the names ----

    /** The name lists of the checker's bodies: the same names forwards and backwards, and overlapping subsets. */
    private static final List<List<String>> LISTS = List.of(List.of("a", "b", "c", "d"), List.of("d", "c", "b", "a"),
            List.of("c", "a"), List.of("d", "b"), List.of("b", "c"), List.of("d", "a"));
    private static final int BODIES = 60;

    private final CriticalSectionHistory history = new CriticalSectionHistory();

    /**
     * A body holding {@code names}: enters, hops threads twice around a short wait, and leaves before
     * its release; one section per name, with that name's fencing token.
     */
    private Mono<Integer> checkedBody(List<String> names, MultiLockLease lease) {
        return Mono.defer(() -> {
            long enter = System.nanoTime();
            return Mono.just(names.size())
                    .publishOn(Schedulers.parallel())
                    .delayElement(Duration.ofMillis(2))
                    .publishOn(Schedulers.parallel())
                    // doOnTerminate runs before completion travels on to the release; doFinally would run after it.
                    .doOnTerminate(() -> {
                        long exit = System.nanoTime();
                        for (String name : names) {
                            history.add(new CriticalSectionHistory.Section("p", name, lease == null ? "none" : lease.token(),
                                    lease == null ? 0 : lease.fencingToken(name), enter, exit));
                        }
                    });
        });
    }

    /** Runs {@link #BODIES} bodies at once over {@link #LISTS}, each through {@code guard} (the lock, or nothing). */
    private long runWorkload(BiFunction<Integer, Function<MultiLockLease, Mono<Integer>>, Mono<Integer>> guard) {
        return Flux.range(0, BODIES)
                .flatMap(i -> guard.apply(i, lease -> checkedBody(LISTS.get(i % LISTS.size()), lease)), BODIES)
                .count()
                .block(Duration.ofMinutes(2));
    }

    @Test
    void callersListingTheSameNamesInOtherOrdersAllFinishAndNeverShareAName() {
        // Three instances: three clients of one store, as three processes would be.
        LockOptions patient = LockOptions.builder().acquireTimeout(Duration.ofMinutes(1)).build();
        List<ReactiveMultiLock> clients = List.of(newLock(patient), newLock(patient), newLock(patient));
        long done = runWorkload((i, body) -> clients.get(i % clients.size())
                .withLocks(LISTS.get(i % LISTS.size()), Duration.ofSeconds(5), body));
        assertThat(done).as("bodies that ran: none deadlocked or timed out").isEqualTo(BODIES);
        assertThat(history.overlaps()).isEmpty();
        assertThat(history.maxOccupancy()).as("sections of one name inside at once").isEqualTo(1);
        assertThat(history.fencingViolations()).isEmpty();
    }

    @Test
    void withoutTheLockTheCheckerSeesTwoBodiesHoldingOneName() {
        runWorkload((i, body) -> body.apply(null));
        assertThat(history.maxOccupancy())
                .as("negative control: the checker must see a name shared when nothing prevents it")
                .isGreaterThan(1);
    }

    // ---- Leases ----

    @Test
    void renewalKeepsEveryNameWhileTheBodyOutlivesTheTtl() {
        // Renewals every third of a 1 s TTL leave ~600 ms of slack for a late timer on a loaded machine.
        StepVerifier.create(lock().withLocks(ABC, Duration.ofSeconds(1),
                        Mono.delay(Duration.ofMillis(2500)).then(heldNow(ABC))))
                .expectNext(ABC)
                .verifyComplete();
    }

    @Test
    void losingOneNameCancelsTheBodyWithLockLostExceptionNamingItAndReleasesTheOthers() {
        RecordingListener events = new RecordingListener();
        // Renewed every 100 ms, so the loss shows soon; on a two-minute lease, so that the others gone
        // within WAIT (a twelfth of it) were released, not expired.
        ReactiveMultiLock listened = newLock(LockOptions.builder().listener(events).renewalInterval(Duration.ofMillis(100)).build());
        PublisherProbe<Object> body = PublisherProbe.of(Mono.never());
        StepVerifier.create(listened.withLocks(ABC, Duration.ofMinutes(2), body.mono()))
                .expectSubscription()
                .then(() -> eventually().until(() -> ABC.stream().allMatch(this::isLocked)))
                .then(() -> expire("b"))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockLostException.class)
                        .hasMessageStartingWith("Lost lock 'b': ").hasMessageContaining("[a, b, c]"))
                .verify(WAIT);
        body.assertWasCancelled();
        assertThat(events.list).filteredOn(e -> !e.startsWith("renewed"))
                .containsExactly("acquired [a, b, c]", "lost [a, b, c]", "released [a, b, c]");
        eventually().until(() -> ABC.stream().noneMatch(this::isLocked));
        StepVerifier.create(once().withLocks(ABC, TTL, Mono.just("next"))).expectNext("next").verifyComplete();
    }

    // ---- Arguments ----

    static Stream<Arguments> badNames() {
        List<String> tooMany = IntStream.rangeClosed(0, ReactiveMultiLock.MAX_NAMES).mapToObj(i -> "n" + i).toList();
        return Stream.of(
                Arguments.of("null list", null, NullPointerException.class, "names"),
                Arguments.of("empty list", List.of(), IllegalArgumentException.class, "names must have 1 to 64 elements, got 0"),
                Arguments.of("too many", tooMany, IllegalArgumentException.class, "names must have 1 to 64 elements, got 65"),
                Arguments.of("null name", Arrays.asList("a", null), NullPointerException.class, "names must not contain null"),
                Arguments.of("a name twice", List.of("b", "a", "b"), IllegalArgumentException.class,
                        "names must not repeat a name, got 'b' twice"),
                Arguments.of("empty name", List.of("a", ""), IllegalArgumentException.class, "lock name must have 1 to 512"),
                Arguments.of("name too long", List.of("a", "x".repeat(513)), IllegalArgumentException.class,
                        "lock name must have 1 to 512"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badNames")
    void badNamesAreRejectedAtCallTimeAndHeardAndNothingIsLocked(String what, Collection<String> names,
            Class<? extends Throwable> type, String message) {
        RecordingListener events = new RecordingListener();
        ReactiveMultiLock listened = newLock(LockOptions.builder().listener(events).build());
        PublisherProbe<String> body = PublisherProbe.of(Mono.just("x"));
        assertThatThrownBy(() -> listened.withLocks(names, TTL, body.mono())).isInstanceOf(type).hasMessageContaining(message);
        assertThat(events.failures).singleElement().isInstanceOf(type);
        body.assertWasNotSubscribed();
        assertThat(namesLeft()).isEmpty();
    }

    @Test
    void theLocksTtlAndBodyChecksApply() {
        assertThatThrownBy(() -> lock().withLocks(ABC, Duration.ofMillis(99), Mono.just(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 100 ms");
        assertThatThrownBy(() -> lock().withLocks(ABC, null, Mono.just(1)))
                .isInstanceOf(NullPointerException.class).hasMessage("ttl");
        assertThatThrownBy(() -> lock().withLocks(ABC, TTL, (Mono<Object>) null))
                .isInstanceOf(NullPointerException.class).hasMessage("body");
        assertThatThrownBy(() -> lock().withLocks(ABC, TTL, (Function<MultiLockLease, Mono<Object>>) null))
                .isInstanceOf(NullPointerException.class).hasMessage("body");
    }

    @Test
    void theMostNamesAllowedAreTakenTogetherAndTheirOrderIsSorted() {
        List<String> names = new ArrayList<>(IntStream.range(0, ReactiveMultiLock.MAX_NAMES).mapToObj(i -> "n" + i).toList());
        Collections.shuffle(names);
        StepVerifier.create(lock().withLocks(names, TTL, lease -> heldNow(lease.names()).map(held -> held.equals(lease.names()))
                        .map(allHeld -> allHeld && lease.names().equals(names.stream().sorted().toList()))))
                .expectNext(true)
                .verifyComplete();
        assertThat(namesLeft()).isEmpty();
    }

    // ---- Cancel storm ----

    @Test
    void aCancelStormLeavesNothingLockedNobodyWaitingAndNoRenewalRunningWithinTenSeconds() {
        ReactiveMultiLock storm = newLock(LockOptions.builder()
                .backoff(Duration.ofMillis(1), Duration.ofMillis(5)).renewalInterval(Duration.ofMillis(20)).build());
        AtomicInteger bodiesCut = new AtomicInteger();
        // Cancels within 3 ms, within 250 ms, and 1 ms into a body (see CancelStorm), so that some
        // cancels cut bodies (as in the Cluster and read-write storms).
        Flux.range(0, 5_000)
                .flatMap(i -> {
                    ThreadLocalRandom random = ThreadLocalRandom.current();
                    List<String> names = IntStream.range(0, 12).mapToObj(n -> "storm:" + n).collect(Collectors.toList());
                    Collections.shuffle(names, random);
                    return CancelStorm.acquisition(i, 60, 250, bodiesCut,
                                    body -> storm.withLocks(names.subList(0, 1 + random.nextInt(4)), Duration.ofMinutes(1), body))
                            .onErrorResume(LockAcquisitionException.class, e -> Mono.empty());
                }, 64)
                .then()
                .block(Duration.ofMinutes(2));
        // The TTL is a minute: what is gone within 10 s was released, not expired. Not 1 s: in the full
        // build (its test JVMs sharing 2 cores) the last background releases of the storm were still
        // on their way after 1 s (12 names, stress run of 12babb0), while alone it clears in time.
        await().atMost(Duration.ofSeconds(10)).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(10))
                .untilAsserted(() -> {
                    assertThat(activeLeases()).as("renewals running").isZero();
                    assertThat(namesLeft()).as("names held or waited for").isEmpty();
                });
        assertThat(bodiesCut).as("cancels also hit running bodies").hasPositiveValue();
    }
}
