package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockClosedException;
import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.TcpProxy;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.util.RaceTestUtils;

/**
 * {@code close()} racing what else may happen to a held lock at that moment: the subscriber's
 * cancel, a renewal on its way, the lease lost, a grant's reply arriving. Each race is run
 * {@value #ROUNDS} times on a fresh client, and each round must end as a user would want: once
 * {@code closeAsync()} completed no key of the client is left in Redis (the lease is 5 minutes, so
 * only a release removes it in time) and another holder's key is untouched, a body is cancelled
 * once, a waiter fails with {@link LockClosedException}, and nothing reaches Reactor's dropped hooks.
 */
@WithRedis
class CloseRacesTest {

    private static final int ROUNDS = 20;
    private static final Duration LEASE = Duration.ofMinutes(5);
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final Duration EVERY = Duration.ofSeconds(1);
    /** Held by another client throughout (set directly), so that a waiter on it waits until close. */
    private static final String BUSY = "busy";

    private RedisServer redis;
    /** Signals dropped to Reactor's hooks, but for those of {@link #atTheCancelledSubscriber}. */
    private final List<Object> dropped = new CopyOnWriteArrayList<>();
    /**
     * Errors dropped by a test's own subscriber after it cancelled: an error that crossed the
     * cancel on its way, as Reactive Streams lets it, which Reactor's subscribers drop. Not a
     * signal the library lost.
     */
    private final List<Object> atTheCancelledSubscriber = new CopyOnWriteArrayList<>();

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
        redis.call("FLUSHALL");
        Hooks.onErrorDropped(e -> (droppedByASubscriber() ? atTheCancelledSubscriber : dropped).add(e));
        Hooks.onNextDropped(dropped::add);
    }

    /** Whether the hook was called by a subscriber at the end of a chain (the test's {@code subscribe(...)}). */
    private static boolean droppedByASubscriber() {
        return StackWalker.getInstance().walk(frames -> frames
                .dropWhile(f -> !f.getMethodName().equals("onErrorDropped"))
                .dropWhile(f -> f.getMethodName().equals("onErrorDropped"))
                .findFirst()
                .map(f -> f.getClassName().equals("reactor.core.publisher.LambdaMonoSubscriber"))
                .orElse(false));
    }

    @AfterEach
    void tearDown() {
        Hooks.resetOnErrorDropped();
        Hooks.resetOnNextDropped();
    }

    @Test
    void closeRacingTheSubscribersCancelReleasesTheLockAndCancelsTheBodyOnce() {
        for (int round = 1; round <= ROUNDS; round++) {
            ReactiveRedisLock client = ReactiveRedisLock.create(redis.uri());
            AtomicInteger cancelled = new AtomicInteger();
            Held held = hold(client, lease -> Mono.never().doOnCancel(cancelled::incrementAndGet));
            awaitHeld(client);
            CompletableFuture<Object> waiter = waiter(client);

            AtomicReference<CompletableFuture<Void>> closing = new AtomicReference<>();
            RaceTestUtils.race(held.subscription::dispose, () -> closing.set(client.closeAsync().toFuture()));

            closed(closing.get(), round);
            assertThat(pttl("report")).as("round %d: PTTL of the lock once closeAsync() completed", round).isEqualTo("-2");
            assertThat(cancelled).as("round %d: the body cancelled once", round).hasValue(1);
            assertEnds(round, waiter);
        }
        assertThat(atTheCancelledSubscriber).as("errors dropped by the subscriber that cancelled: close's loss, if any")
                .allSatisfy(e -> assertThat(e).isInstanceOf(LockLostException.class)).hasSizeLessThanOrEqualTo(ROUNDS);
        System.out.println("[close races] rounds in which close's LockLostException crossed the subscriber's cancel: "
                + atTheCancelledSubscriber.size() + " of " + ROUNDS);
    }

    @Test
    void closeRacingARenewalOnItsWayReleasesTheLockAndFailsTheBody() {
        try (TcpProxy proxy = TcpProxy.to(redis)) {
            proxy.latency(Duration.ofMillis(2)); // each renewal spends a few milliseconds on its way
            for (int round = 1; round <= ROUNDS; round++) {
                VirtualTimeScheduler time = VirtualTimeScheduler.create();
                ReactiveRedisLock client = ReactiveRedisLock.create(proxy.uri(),
                        LockOptions.builder().scheduler(time).renewalInterval(EVERY).build());
                Held held = hold(client, lease -> Mono.never());
                awaitHeld(client);
                CompletableFuture<Object> waiter = waiter(client);

                AtomicReference<CompletableFuture<Void>> closing = new AtomicReference<>();
                RaceTestUtils.race(() -> time.advanceTimeBy(EVERY), () -> closing.set(client.closeAsync().toFuture()));

                closed(closing.get(), round);
                assertThat(pttl("report")).as("round %d: PTTL of the lock once closeAsync() completed", round).isEqualTo("-2");
                assertThat(held.outcome).as("round %d: the body's subscriber", round).failsWithin(WAIT)
                        .withThrowableThat().havingCause().isInstanceOf(LockLostException.class);
                assertEndsWithNoCancel(round, waiter);
                time.dispose();
            }
        }
    }

    @Test
    void closeRacingTheDiscoveryOfALostLeaseLeavesTheNewHoldersKeyAndFailsTheBody() {
        for (int round = 1; round <= ROUNDS; round++) {
            VirtualTimeScheduler time = VirtualTimeScheduler.create();
            ReactiveRedisLock client = ReactiveRedisLock.create(redis.uri(),
                    LockOptions.builder().scheduler(time).renewalInterval(EVERY).build());
            Held held = hold(client, lease -> Mono.never());
            awaitHeld(client);
            CompletableFuture<Object> waiter = waiter(client);
            // The lease is lost: the key expired, and another client took the name.
            redis.call("SET", "lock:{report}", "another-holder", "PX", "60000");

            AtomicReference<CompletableFuture<Void>> closing = new AtomicReference<>();
            RaceTestUtils.race(() -> time.advanceTimeBy(EVERY), () -> closing.set(client.closeAsync().toFuture()));

            closed(closing.get(), round);
            assertThat(redis.call("GET", "lock:{report}")).as("round %d: the other holder's lock once closeAsync() completed", round)
                    .isEqualTo("another-holder");
            assertThat(held.outcome).as("round %d: the body's subscriber", round).failsWithin(WAIT)
                    .withThrowableThat().havingCause().isInstanceOf(LockLostException.class);
            assertEndsWithNoCancel(round, waiter);
            redis.call("DEL", "lock:{report}");
            time.dispose();
        }
    }

    @Test
    void closeRacingAGrantsReplyReleasesTheGrant() {
        int grantFirst = 0;
        try (TcpProxy proxy = TcpProxy.to(redis)) {
            for (int round = 1; round <= ROUNDS; round++) {
                ReactiveRedisLock client = ReactiveRedisLock.create(proxy.uri());
                client.withLock("warm-up", LEASE, Mono.just(0)).block(WAIT); // connected, scripts loaded
                proxy.freeze();
                AtomicInteger ran = new AtomicInteger();
                CompletableFuture<Integer> acquisition = client.withLock("report", LEASE,
                        Mono.fromCallable(ran::incrementAndGet)).toFuture();
                CompletableFuture<Object> waiter = waiter(client);

                // The held acquire reaches Redis, whose grant comes back as the close begins.
                AtomicReference<CompletableFuture<Void>> closing = new AtomicReference<>();
                RaceTestUtils.race(proxy::unfreeze, () -> closing.set(client.closeAsync().toFuture()));

                closed(closing.get(), round);
                assertThat(pttl("report")).as("round %d: PTTL of the lock once closeAsync() completed", round).isEqualTo("-2");
                // The grant came first (the body ran, once, and its value went out) or the close did.
                Object outcome = acquisition.orTimeout(WAIT.toSeconds(), TimeUnit.SECONDS)
                        .handle((value, error) -> value != null ? value : error).join();
                assertThat(outcome).as("round %d: the acquisition's outcome", round)
                        .satisfiesAnyOf(o -> assertThat(o).isEqualTo(1), o -> assertThat(o).isInstanceOf(LockClosedException.class));
                assertThat(ran.get()).as("round %d: bodies run", round).isLessThanOrEqualTo(1);
                assertEndsWithNoCancel(round, waiter);
                grantFirst += ran.get();
            }
        }
        System.out.println("[close races] rounds in which the grant ran its body before the close: " + grantFirst + " of " + ROUNDS);
    }

    private record Held(Disposable subscription, CompletableFuture<Object> outcome) {}

    /** Holds "report" with {@code body}; the outcome completes when the subscription ends. */
    private static Held hold(ReactiveRedisLock client, Function<LockLease, Mono<Object>> body) {
        CompletableFuture<Object> outcome = new CompletableFuture<>();
        Disposable subscription = client.withLock("report", LEASE, body)
                .subscribe(outcome::complete, outcome::completeExceptionally, () -> outcome.complete(null));
        return new Held(subscription, outcome);
    }

    /** Returns once {@code client}'s body holds its lock (polled every millisecond: the rounds are many). */
    private static void awaitHeld(ReactiveRedisLock client) {
        await().atMost(WAIT).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(1)).until(() -> client.activeLeases() == 1);
    }

    /** Waits for {@value #BUSY}, held by another client. */
    private CompletableFuture<Object> waiter(ReactiveRedisLock client) {
        redis.call("SET", "lock:{" + BUSY + "}", "another-holder", "PX", "60000");
        return client.withLock(BUSY, LEASE, Mono.<Object>just("ran")).toFuture();
    }

    private void closed(CompletableFuture<Void> closing, int round) {
        try {
            closing.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException | ExecutionException | TimeoutException e) {
            throw new AssertionError("round " + round + ": closeAsync() did not complete", e);
        }
    }

    /** The waiter failed as closed, the other holder's key is left, and nothing was dropped (nothing cancelled here). */
    private void assertEndsWithNoCancel(int round, CompletableFuture<Object> waiter) {
        assertEnds(round, waiter);
        assertThat(atTheCancelledSubscriber).as("round %d: errors dropped by a subscriber that did not cancel", round).isEmpty();
    }

    /** The waiter failed as closed, the other holder's key is left, and the library dropped nothing. */
    private void assertEnds(int round, CompletableFuture<Object> waiter) {
        assertThat(waiter).as("round %d: the waiter", round).failsWithin(WAIT)
                .withThrowableThat().havingCause().isInstanceOf(LockClosedException.class);
        assertThat(redis.call("GET", "lock:{" + BUSY + "}")).as("round %d: the other holder's lock (a waiter marks it with '+')", round)
                .startsWith("another-holder");
        assertThat(dropped).as("round %d: signals dropped to Reactor's hooks", round).isEmpty();
    }

    private String pttl(String name) {
        return redis.call("PTTL", "lock:{" + name + "}");
    }
}
