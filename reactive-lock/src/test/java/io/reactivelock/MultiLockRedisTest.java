package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.support.CommandStats;
import io.reactivelock.support.CriticalSectionHistory;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.redis.RedisInternals;

/**
 * What the Redis multi-lock keeps in Redis, how it and the single lock share their names, and how
 * each one's release wakes the other's waiters.
 */
@WithRedis
class MultiLockRedisTest {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(20);
    /** Every backoff step of a waiter that only a release notice can wake within {@link #WOKEN_WITHIN}. */
    private static final Duration NOTICE_ONLY_BACKOFF = Duration.ofMinutes(10);
    /** A waiter that got its locks this soon after the release was woken by a notice. */
    private static final Duration WOKEN_WITHIN = Duration.ofSeconds(5);

    private RedisServer redis;
    private final List<ReactiveRedisLock> created = new ArrayList<>();
    private final List<Disposable> subscriptions = new ArrayList<>();

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
    }

    @AfterEach
    void tearDown() {
        subscriptions.forEach(Disposable::dispose);
        created.forEach(ReactiveRedisLock::close);
    }

    /** The multi-lock of a client of its own (another process, as far as Redis can tell). */
    private ReactiveMultiLock multi(LockOptions.Builder options) {
        return plain(options).multiLock();
    }

    /** A client of its own, closed after the test: the plain lock. */
    private ReactiveRedisLock plain(LockOptions.Builder options) {
        ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), options.build());
        created.add(lock);
        return lock;
    }

    /** Options of a waiter that only a release notice can wake in time. */
    private static LockOptions.Builder noticeOnly() {
        return LockOptions.builder().backoff(NOTICE_ONLY_BACKOFF, NOTICE_ONLY_BACKOFF).acquireTimeout(Duration.ofMinutes(20));
    }

    private static ConditionFactory eventually() {
        return await().atMost(WAIT).pollInterval(Duration.ofMillis(10));
    }

    private boolean exists(String key) {
        return "1".equals(redis.call("EXISTS", key));
    }

    @Test
    void everyNameIsTheSingleLocksKeyHoldingTheTokenAndEveryFencingRecordTheNamesToken() {
        ReactiveMultiLock lock = multi(LockOptions.builder());
        StepVerifier.create(lock.withLocks(List.of("order:2", "order:1"), TTL, lease -> Mono.fromCallable(() -> {
                    for (String name : lease.names()) {
                        String key = "lock:{" + name + "}";
                        assertThat(redis.call("GET", key)).as(key).isEqualTo(lease.token());
                        assertThat(Long.parseLong(redis.call("PTTL", key))).as("TTL of " + key).isBetween(25_000L, 30_000L);
                        assertThat(Long.parseLong(redis.call("GET", key + ":fence"))).as(key + ":fence")
                                .isEqualTo(lease.fencingToken(name));
                    }
                    return lease.names();
                }).subscribeOn(Schedulers.boundedElastic())))
                .expectNext(List.of("order:1", "order:2"))
                .verifyComplete();
        assertThat(exists("lock:{order:1}") || exists("lock:{order:2}")).isFalse();
    }

    @Test
    void oneScriptTakesEveryNameAndOneReleasesThem() {
        ReactiveMultiLock lock = multi(LockOptions.builder());
        List<String> names = List.of("a", "b", "c", "d", "e");
        lock.withLocks(names, TTL, Mono.just("first: the scripts are loaded")).block(WAIT);
        redis.call("CONFIG", "RESETSTAT");
        assertThat(lock.withLocks(names, TTL, Mono.just("second")).block(WAIT)).isEqualTo("second");
        assertThat(CommandStats.calls(redis, "evalsha")).as("scripts run for five names").isEqualTo(2);
        assertThat(CommandStats.calls(redis, "set")).as("lock keys and fencing records set").isEqualTo(10);
        assertThat(CommandStats.calls(redis, "del")).as("lock keys deleted").isEqualTo(5);
    }

    @Test
    void aMultiLockAndAPlainLockOnOneOfItsNamesExcludeEachOther() {
        ReactiveMultiLock multi = multi(LockOptions.builder());
        ReactiveMultiLock multiOnce = multi(LockOptions.builder().acquireTimeout(Duration.ZERO));
        ReactiveRedisLock plain = plain(LockOptions.builder());

        Sinks.Empty<Void> plainDone = Sinks.empty();
        subscriptions.add(plain.withLock("b", TTL, plainDone.asMono()).subscribe());
        eventually().until(() -> exists("lock:{b}"));
        StepVerifier.create(multiOnce.withLocks(List.of("a", "b"), TTL, Mono.just("never")))
                .expectErrorSatisfies(e -> assertThat(((LockAcquisitionException) e).reason())
                        .isEqualTo(LockAcquisitionException.Reason.BUSY))
                .verify(WAIT);
        assertThat(exists("lock:{a}")).as("a, not taken by the refused attempt").isFalse();
        plainDone.tryEmitEmpty();

        Sinks.Empty<Void> multiDone = Sinks.empty();
        subscriptions.add(multi.withLocks(List.of("a", "b"), TTL, multiDone.asMono()).subscribe());
        eventually().until(() -> exists("lock:{a}") && exists("lock:{b}"));
        StepVerifier.create(plain.withAcquireTimeout(Duration.ZERO).withLock("a", TTL, Mono.just("never")))
                .expectErrorSatisfies(e -> assertThat(((LockAcquisitionException) e).reason())
                        .isEqualTo(LockAcquisitionException.Reason.BUSY))
                .verify(WAIT);
        multiDone.tryEmitEmpty();
        eventually().until(() -> !exists("lock:{a}") && !exists("lock:{b}"));
    }

    @Test
    void fencingTokensOfEachNameRiseAcrossPlainAndMultiLocks() {
        ReactiveMultiLock multi = multi(LockOptions.builder());
        ReactiveRedisLock plain = plain(LockOptions.builder());
        long plainA = plain.withLock("a", TTL, lease -> Mono.just(lease.fencingToken())).block(WAIT);
        MultiLockLease both = multi.withLocks(List.of("b", "a"), TTL, Mono::just).block(WAIT);
        long plainB = plain.withLock("b", TTL, lease -> Mono.just(lease.fencingToken())).block(WAIT);
        assertThat(both.fencingToken("a")).as("a, after its plain holder").isGreaterThan(plainA);
        assertThat(plainB).as("b, after its multi-lock holder").isGreaterThan(both.fencingToken("b"));
    }

    // ---- The checker over plain and multi-locks ----

    private static final int BODIES = 60;
    private final CriticalSectionHistory history = new CriticalSectionHistory();

    /** A body holding {@code names}; see {@code MultiLockContract}: one section per name, hopping threads. */
    private Mono<Integer> checkedBody(List<String> names, String token, Function<String, Long> fencingToken) {
        return Mono.defer(() -> {
            long enter = System.nanoTime();
            return Mono.just(1)
                    .publishOn(Schedulers.parallel())
                    .delayElement(Duration.ofMillis(2))
                    .publishOn(Schedulers.parallel())
                    .doOnTerminate(() -> {
                        long exit = System.nanoTime();
                        names.forEach(name -> history.add(new CriticalSectionHistory.Section("p", name, token,
                                fencingToken.apply(name), enter, exit)));
                    });
        });
    }

    /** Half the bodies hold one name through the plain lock, half two names through {@code multi}. */
    private void runMixedWorkload(ReactiveMultiLock multi) {
        ReactiveRedisLock plain = plain(LockOptions.builder().acquireTimeout(Duration.ofMinutes(1)));
        List<String> names = List.of("a", "b", "c");
        long done = Flux.range(0, BODIES)
                .flatMap(i -> {
                    String one = names.get(i % 3);
                    List<String> two = List.of(names.get((i + 1) % 3), names.get((i + 2) % 3));
                    return i % 2 == 0
                            ? plain.withLock(one, Duration.ofSeconds(5), lease -> checkedBody(List.of(one), lease.token(),
                                    name -> lease.fencingToken()))
                            : multi.withLocks(two, Duration.ofSeconds(5), lease -> checkedBody(two, lease.token(),
                                    lease::fencingToken));
                }, BODIES)
                .count()
                .block(Duration.ofMinutes(2));
        assertThat(done).as("bodies that ran").isEqualTo(BODIES);
    }

    @Test
    void plainAndMultiLockBodiesNeverShareANameAndEnterEachInFencingOrder() {
        runMixedWorkload(multi(LockOptions.builder().acquireTimeout(Duration.ofMinutes(1))));
        assertThat(history.overlaps()).isEmpty();
        assertThat(history.maxOccupancy()).isEqualTo(1);
        assertThat(history.fencingViolations()).isEmpty();
    }

    @Test
    void aMultiLockOnOtherKeysDoesNotExcludeThePlainLockAndTheCheckerSeesIt() {
        // Negative control: the exclusion above comes from the shared keys.
        runMixedWorkload(multi(LockOptions.builder().keyPrefix("other").acquireTimeout(Duration.ofMinutes(1))));
        assertThat(history.maxOccupancy()).as("bodies holding one name at once").isGreaterThan(1);
    }

    // ---- Waking each other's waiters ----

    @Test
    void aMultiLockReleaseWakesAPlainWaiterOfEachNameThroughItsNotice() {
        ReactiveMultiLock multi = multi(LockOptions.builder());
        ReactiveRedisLock waiting = plain(noticeOnly());
        Sinks.Empty<Void> release = Sinks.empty();
        subscriptions.add(multi.withLocks(List.of("a", "b"), TTL, release.asMono()).subscribe());
        eventually().until(() -> exists("lock:{a}"));
        AtomicLong wokenA = new AtomicLong();
        AtomicLong wokenB = new AtomicLong();
        subscriptions.add(waiting.withLock("a", TTL, Mono.fromRunnable(() -> wokenA.set(System.nanoTime())).then(Mono.never()))
                .subscribe());
        subscriptions.add(waiting.withLock("b", TTL, Mono.fromRunnable(() -> wokenB.set(System.nanoTime())).then(Mono.never()))
                .subscribe());
        eventually().until(() -> RedisInternals.releaseListeners(redis, "lock:{a}") == 1
                && RedisInternals.releaseListeners(redis, "lock:{b}") == 1);
        long releasedAt = System.nanoTime();
        release.tryEmitEmpty();
        eventually().until(() -> wokenA.get() != 0 && wokenB.get() != 0);
        assertThat(Duration.ofNanos(wokenA.get() - releasedAt)).as("a's waiter").isLessThan(WOKEN_WITHIN);
        assertThat(Duration.ofNanos(wokenB.get() - releasedAt)).as("b's waiter").isLessThan(WOKEN_WITHIN);
    }

    @Test
    void aPlainReleaseWakesAMultiLockWaiterSleepingOnThatName() {
        ReactiveRedisLock plain = plain(LockOptions.builder());
        ReactiveMultiLock waiting = multi(noticeOnly());
        Sinks.Empty<Void> release = Sinks.empty();
        subscriptions.add(plain.withLock("b", TTL, release.asMono()).subscribe());
        eventually().until(() -> exists("lock:{b}"));
        AtomicLong woken = new AtomicLong();
        subscriptions.add(waiting.withLocks(List.of("a", "b", "c"), TTL,
                Mono.fromRunnable(() -> woken.set(System.nanoTime())).then(Mono.never())).subscribe());
        eventually().until(() -> "1".equals(redis.call("ZCARD", "lock:{b}:sleepers"))
                && RedisInternals.releaseListeners(redis, "lock:{b}") == 1);
        assertThat(exists("lock:{a}:sleepers") || exists("lock:{c}:sleepers")).as("sleeping on the busy name only").isFalse();
        long releasedAt = System.nanoTime();
        release.tryEmitEmpty();
        eventually().until(() -> woken.get() != 0);
        assertThat(Duration.ofNanos(woken.get() - releasedAt)).isLessThan(WOKEN_WITHIN);
    }

    @Test
    void aMultiLockWaiterWokenForANameButRefusedByAnotherPassesTheWakeUpOnToThatNamesNextSleeper() {
        ReactiveRedisLock holders = plain(LockOptions.builder());
        Sinks.Empty<Void> releaseX = Sinks.empty();
        subscriptions.add(holders.withLock("x", TTL, releaseX.asMono()).subscribe());
        eventually().until(() -> exists("lock:{x}"));

        // The multi-lock waiter sleeps on x first, so x's release wakes it, not the plain waiter.
        ReactiveMultiLock multiWaiting = multi(noticeOnly());
        AtomicLong multiRan = new AtomicLong();
        subscriptions.add(multiWaiting.withLocks(List.of("x", "y"), TTL,
                Mono.fromRunnable(() -> multiRan.set(System.nanoTime())).then(Mono.never())).subscribe());
        eventually().until(() -> "1".equals(redis.call("ZCARD", "lock:{x}:sleepers")));
        ReactiveRedisLock plainWaiting = plain(noticeOnly());
        AtomicLong plainRan = new AtomicLong();
        subscriptions.add(plainWaiting.withLock("x", TTL, Mono.fromRunnable(() -> plainRan.set(System.nanoTime())).then(Mono.never()))
                .subscribe());
        eventually().until(() -> "2".equals(redis.call("ZCARD", "lock:{x}:sleepers"))
                && RedisInternals.releaseListeners(redis, "lock:{x}") == 2);
        // y is taken meanwhile: the woken multi-lock waiter will be refused by it.
        subscriptions.add(holders.withLock("y", TTL, Mono.never()).subscribe());
        eventually().until(() -> exists("lock:{y}"));

        long releasedAt = System.nanoTime();
        releaseX.tryEmitEmpty();
        eventually().until(() -> plainRan.get() != 0);
        assertThat(Duration.ofNanos(plainRan.get() - releasedAt)).as("from x's release to the plain waiter's body")
                .isLessThan(WOKEN_WITHIN);
        assertThat(multiRan).as("the multi-lock waiter, refused by y").hasValue(0);
        assertThat(redis.call("ZCARD", "lock:{y}:sleepers")).as("sleeping on y now").isEqualTo("1");
    }

    @Test
    void theMultiLockOfAClosedClientRefusesNewAcquisitions() {
        ReactiveRedisLock client = plain(LockOptions.builder());
        ReactiveMultiLock lock = client.multiLock();
        client.close();
        StepVerifier.create(lock.withLocks(List.of("a", "b"), TTL, Mono.just(1)))
                .expectError(LockClosedException.class)
                .verify(WAIT);
    }
}
