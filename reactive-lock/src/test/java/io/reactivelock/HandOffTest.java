package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.support.CommandStats;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/**
 * Waiters wake on release notices instead of sleeping out their backoff; in non-fair mode a holder
 * hands the lock straight to the longest waiter of its own process; fair mode serves them in order.
 */
@WithRedis
class HandOffTest {

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

    private ReactiveRedisLock lock(boolean fair, Duration backoff) {
        ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                .fair(fair)
                .backoff(backoff, backoff)
                .acquireTimeout(Duration.ofMinutes(2))
                .build());
        locks.add(lock);
        return lock;
    }

    /** Holds lock "a" until the returned sink completes. */
    private Sinks.Empty<Void> hold(ReactiveRedisLock lock) {
        Sinks.Empty<Void> release = Sinks.empty();
        subscriptions.add(lock.withLock("a", TTL, release.asMono()).subscribe());
        await().until(() -> "1".equals(redis.call("EXISTS", "lock:{a}")));
        return release;
    }

    private long queued() {
        return Long.parseLong(redis.call("LLEN", "lock:{a}:queue"));
    }

    @ParameterizedTest(name = "fair={0}")
    @ValueSource(booleans = {false, true})
    void aWaiterIsWokenByTheReleaseNoticeLongBeforeItsBackoffStepEnds(boolean fair) {
        // A 10-minute backoff step: without the notice this waiter would sleep far past the verify timeout.
        ReactiveRedisLock lock = lock(fair, Duration.ofMinutes(10));
        Sinks.Empty<Void> holder = hold(lock);
        StepVerifier.create(lock.withLock("a", TTL, Mono.just("woken")))
                .expectSubscription()
                .then(() -> await().until(() -> redis.call("PUBSUB", "CHANNELS", "lock:*").contains("lock:{a}:released")))
                .then(holder::tryEmitEmpty)
                .expectNext("woken")
                .verifyComplete();
    }

    @Test
    void fairWaitersGetTheLockInArrivalOrder() {
        ReactiveRedisLock lock = lock(true, Duration.ofMillis(50));
        Sinks.Empty<Void> holder = hold(lock);
        List<Integer> order = new CopyOnWriteArrayList<>();
        List<Mono<Integer>> waiters = new ArrayList<>();
        for (int i = 1; i <= 5; i++) {
            int id = i;
            Mono<Integer> waiter = lock.withLock("a", TTL, Mono.fromRunnable(() -> order.add(id)).thenReturn(id)).cache();
            subscriptions.add(waiter.subscribe());
            waiters.add(waiter);
            await().until(() -> queued() == id);
        }
        long publishedBefore = CommandStats.calls(redis, "publish");
        holder.tryEmitEmpty();
        Mono.when(waiters).block(WAIT);
        assertThat(order).containsExactly(1, 2, 3, 4, 5);
        assertThat(CommandStats.calls(redis, "publish") - publishedBefore)
                .as("each waiter was handed the lock in-process, without a notice").isZero();
    }

    @Test
    void aFairInProcessHandOffNeverJumpsAheadOfAnotherProcessFirstInLine() {
        ReactiveRedisLock here = lock(true, Duration.ofMillis(50));
        ReactiveRedisLock elsewhere = lock(true, Duration.ofMillis(50));
        Sinks.Empty<Void> holder = hold(here);
        List<String> order = new CopyOnWriteArrayList<>();
        Mono<String> first = elsewhere.withLock("a", TTL, Mono.fromRunnable(() -> order.add("elsewhere")).thenReturn("")).cache();
        subscriptions.add(first.subscribe());
        await().until(() -> queued() == 1);
        Mono<String> second = here.withLock("a", TTL, Mono.fromRunnable(() -> order.add("here")).thenReturn("")).cache();
        subscriptions.add(second.subscribe());
        await().until(() -> queued() == 2);

        holder.tryEmitEmpty();
        Mono.when(first, second).block(WAIT);
        assertThat(order).containsExactly("elsewhere", "here");
    }

    @Test
    void aCancelledFairWaiterLeavesTheLineAtOnceAndIsSkipped() {
        ReactiveRedisLock lock = lock(true, Duration.ofMillis(50));
        Sinks.Empty<Void> holder = hold(lock);
        List<Integer> order = new CopyOnWriteArrayList<>();
        List<Disposable> waiters = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            int id = i;
            waiters.add(lock.withLock("a", TTL, Mono.fromRunnable(() -> order.add(id))).subscribe());
            await().until(() -> queued() == id);
        }
        waiters.get(1).dispose();
        await().until(() -> queued() == 2);
        holder.tryEmitEmpty();
        await().until(() -> order.size() == 2);
        assertThat(order).containsExactly(1, 3);
        subscriptions.addAll(waiters);
    }

    @Test
    void aCrashedFairWaiterIsSkippedWithinTheWaiterLease() {
        ReactiveRedisLock lock = lock(true, Duration.ofMillis(50));
        Sinks.Empty<Void> holder = hold(lock);
        // What a crashed process leaves behind: a place at the head of the line that nobody will claim.
        String serverMillis = redis.call("EVAL",
                "local t = redis.call('TIME') return t[1] * 1000 + math.floor(t[2] / 1000)", "0");
        long deadline = Long.parseLong(serverMillis) + lock.options().waiterLease().toMillis();
        redis.call("RPUSH", "lock:{a}:queue", "crashed-waiter");
        redis.call("HSET", "lock:{a}:waiters", "crashed-waiter", Long.toString(deadline));

        ReactiveRedisLock patient = ReactiveRedisLock.create(redis.uri(), lock.options().toBuilder()
                // Far below the holder's 30 s TTL: only skipping the dead waiter can make this succeed.
                .acquireTimeout(lock.options().waiterLease().multipliedBy(4))
                .build());
        locks.add(patient);
        StepVerifier.create(patient.withLock("a", TTL, Mono.just("skipped the dead")))
                .expectSubscription()
                .then(() -> await().until(() -> queued() == 2))
                .then(holder::tryEmitEmpty)
                .expectNext("skipped the dead")
                .verifyComplete();
    }

    @ParameterizedTest(name = "fair={0}")
    @ValueSource(booleans = {false, true})
    void aWaiterStillGetsTheLockWhenItsPubSubConnectionIsKilled(boolean fair) {
        ReactiveRedisLock lock = lock(fair, Duration.ofMillis(200));
        Sinks.Empty<Void> holder = hold(lock);
        StepVerifier.create(lock.withLock("a", TTL, Mono.just("done")))
                .expectSubscription()
                .then(() -> await().until(() -> redis.call("PUBSUB", "CHANNELS", "lock:*").contains("lock:{a}:released")))
                .then(() -> redis.call("CLIENT", "KILL", "TYPE", "pubsub"))
                .then(holder::tryEmitEmpty)
                .expectNext("done")
                .verifyComplete();
    }

    @ParameterizedTest(name = "fair={0}")
    @ValueSource(booleans = {false, true})
    void noSubscriptionOrLineIsLeftOnceEveryWaiterIsGone(boolean fair) {
        ReactiveRedisLock lock = lock(fair, Duration.ofMillis(20));
        Sinks.Empty<Void> holder = hold(lock);
        List<Mono<Object>> waiters = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            Mono<Object> waiter = lock.withLock("a", TTL, Mono.empty()).cache();
            subscriptions.add(waiter.subscribe());
            waiters.add(waiter);
        }
        Disposable cancelled = lock.withLock("a", TTL, Mono.never()).subscribe();
        await().until(() -> redis.call("PUBSUB", "CHANNELS", "lock:*").contains("lock:{a}:released"));
        cancelled.dispose();
        holder.tryEmitEmpty();
        Mono.when(waiters).block(WAIT);

        await().untilAsserted(() -> assertThat(redis.call("PUBSUB", "CHANNELS", "*")).isNullOrEmpty());
        assertThat(redis.call("EXISTS", "lock:{a}", "lock:{a}:queue", "lock:{a}:waiters")).isEqualTo("0");
    }

    @Test
    void aNonFairHolderHandsTheLockStraightToLocalWaitersInArrivalOrderOneScriptCallEach() {
        // A 10-minute backoff step: no waiter polls, so every grant below comes from a hand-off.
        ReactiveRedisLock lock = lock(false, Duration.ofMinutes(10));
        Sinks.Empty<Void> holder = hold(lock);
        List<Integer> order = new CopyOnWriteArrayList<>();
        List<Long> fences = new CopyOnWriteArrayList<>();
        List<Mono<Integer>> waiters = new ArrayList<>();
        for (int i = 1; i <= 5; i++) {
            int id = i;
            Mono<Integer> waiter = lock.withLock("a", TTL, lease -> Mono.fromRunnable(() -> {
                order.add(id);
                fences.add(lease.fencingToken());
            }).thenReturn(id)).cache();
            subscriptions.add(waiter.subscribe());
            waiters.add(waiter);
            await().until(() -> lock.localWaiters("a") == id);
        }
        long scriptsBefore = CommandStats.calls(redis, "evalsha");
        long publishedBefore = CommandStats.calls(redis, "publish");

        holder.tryEmitEmpty();
        Mono.when(waiters).block(WAIT);

        assertThat(order).containsExactly(1, 2, 3, 4, 5);
        assertThat(fences).as("fencing tokens of the handed-over leases").isSorted().doesNotHaveDuplicates();
        await().until(() -> "0".equals(redis.call("EXISTS", "lock:{a}")));
        assertThat(CommandStats.calls(redis, "evalsha") - scriptsBefore)
                .as("five hand-offs and the last waiter's release, one script call each").isEqualTo(6);
        assertThat(CommandStats.calls(redis, "publish") - publishedBefore)
                .as("no release announces itself: five went to local waiters, and nobody waited for the last")
                .isZero();
    }

    @Test
    void waitersOfAnotherProcessAreNotStarvedByLocalHandOffs() {
        ReactiveRedisLock busy = lock(false, Duration.ofMillis(50));
        ReactiveRedisLock other = lock(false, Duration.ofMillis(50));
        AtomicBoolean otherGotIt = new AtomicBoolean();
        AtomicInteger localGrants = new AtomicInteger();
        // Four workers of one process keep the lock busy with local waiters at every release.
        Mono<Void> workers = Flux.range(0, 4)
                .flatMap(i -> lock(busy).repeat(() -> !otherGotIt.get()).doOnNext(x -> localGrants.incrementAndGet()))
                .then()
                .cache();
        subscriptions.add(workers.subscribe());
        await().until(() -> localGrants.get() >= 20);

        StepVerifier.create(other.withLock("a", TTL, Mono.fromRunnable(() -> otherGotIt.set(true)).thenReturn("got it")))
                .expectNext("got it")
                .verifyComplete();
        workers.block(WAIT);
    }

    private static Mono<Integer> lock(ReactiveRedisLock lock) {
        return lock.withLock("a", TTL, Mono.just(1).publishOn(Schedulers.parallel()));
    }
}
