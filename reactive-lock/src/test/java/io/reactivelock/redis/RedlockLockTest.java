package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisURI;
import io.reactivelock.LeaseTimeExceededException;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.support.RedisServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
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
import reactor.test.publisher.PublisherProbe;

/**
 * Redlock over five real, independent Redis servers, which the tests kill, pause (SIGSTOP) and
 * restart empty. Lock keys live a minute unless a test says otherwise, so a key that disappears
 * within seconds was released, not expired.
 */
class RedlockLockTest {

    private static final int N = 5;
    private static final Duration TTL = Duration.ofMinutes(1);
    private static final Duration WAIT = Duration.ofSeconds(10);
    /** Generous, so that a busy test machine never makes a live node look dead. */
    private static final RedlockOptions PATIENT = new RedlockOptions(Duration.ofSeconds(2), 0.01);
    /** For short leases, whose TTL must exceed the node timeout. */
    private static final RedlockOptions QUICK = new RedlockOptions(Duration.ofMillis(250), 0.01);
    private static final Duration SHORT_TTL = Duration.ofMillis(900);

    private static final List<RedisServer> servers = new ArrayList<>();
    private final List<ReactiveRedlock> locks = new ArrayList<>();

    @BeforeAll
    static void startServers() {
        for (int i = 0; i < N; i++) {
            servers.add(RedisServer.start());
        }
    }

    @AfterAll
    static void stopServers() {
        servers.forEach(RedisServer::close);
        servers.clear();
    }

    @BeforeEach
    void resetServers() {
        for (RedisServer server : servers) {
            if (!server.isRunning()) {
                server.restart();
            }
            server.resume();
            server.call("FLUSHALL");
            server.call("CONFIG", "RESETSTAT");
        }
    }

    @AfterEach
    void closeLocks() {
        servers.forEach(RedisServer::resume);
        locks.forEach(ReactiveRedlock::close);
    }

    private static List<RedisURI> uris() {
        return servers.stream().map(RedisServer::uri).toList();
    }

    private ReactiveRedlock lock(LockOptions options, RedlockOptions redlock) {
        ReactiveRedlock lock = ReactiveRedlock.create(uris(), options, redlock);
        locks.add(lock);
        return lock;
    }

    private ReactiveRedlock lock() {
        return lock(LockOptions.builder().acquireTimeout(Duration.ofSeconds(5)).build(), PATIENT);
    }

    private static LockOptions impatient() {
        return LockOptions.builder().acquireTimeout(Duration.ofMillis(300)).build();
    }

    /** How many running, unpaused nodes hold the lock {@code name}; blocking. */
    private static int nodesHolding(String name) {
        return (int) servers.stream()
                .filter(s -> s.isRunning() && !s.isPaused())
                .filter(s -> "1".equals(s.call("EXISTS", "lock:{" + name + "}")))
                .count();
    }

    /** {@link #nodesHolding} off the reactive threads, for use inside a body. */
    private static Mono<Integer> nodesHoldingFromBody(String name) {
        return Mono.fromCallable(() -> nodesHolding(name)).subscribeOn(Schedulers.boundedElastic());
    }

    /**
     * Whether an acquire of {@code name} ran on the node (the acquire script leaves a fencing
     * record behind, which nothing else writes) and the lock key is gone since.
     */
    private static boolean ranAnAcquireAndNowHoldsNothing(RedisServer node, String name) {
        return "1".equals(node.call("EXISTS", "lock:{" + name + "}:fence"))
                && "0".equals(node.call("EXISTS", "lock:{" + name + "}"));
    }

    private static ConditionFactory poll() {
        return await().atMost(WAIT).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(10));
    }

    private static void awaitNodesHolding(String name, int count) {
        poll().until(() -> nodesHolding(name) == count);
    }

    /**
     * What {@code withLock} promises when it ends: released on a majority (so the lock can be taken
     * again), the releases to the other nodes still on their way; then gone from every node.
     */
    private static void assertReleased(String name) {
        assertThat(nodesHolding(name)).as("nodes holding the lock once withLock ended").isLessThanOrEqualTo(N / 2);
        awaitNodesHolding(name, 0);
    }

    private static void kill(int... indexes) {
        IntStream.of(indexes).forEach(i -> servers.get(i).kill());
    }

    // --- the normal paths ---------------------------------------------------------------------

    @Test
    void theBodyRunsOnceAMajorityHoldsTheLockAndTheValueIsEmittedOnceAMajorityReleasedIt() {
        Mono<Boolean> body = Mono.fromCallable(() -> {
            int atStart = nodesHolding("a");
            awaitNodesHolding("a", N); // the slower nodes' grants arrive while the body runs
            return atStart >= 3;
        }).subscribeOn(Schedulers.boundedElastic());
        StepVerifier.create(lock().withLock("a", TTL, body))
                .expectNext(true)
                .verifyComplete();
        assertReleased("a");
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"value", "empty", "error"})
    void everyWayTheBodyEndsReleasesTheLockOnEveryNode(String outcome) {
        Mono<String> body = switch (outcome) {
            case "value" -> Mono.just("value");
            case "empty" -> Mono.empty();
            default -> Mono.error(new IllegalStateException("error"));
        };
        String seen = lock().withLock("a", TTL, body)
                .onErrorResume(IllegalStateException.class, e -> Mono.just(e.getMessage()))
                .defaultIfEmpty("empty")
                .block(WAIT);
        assertThat(seen).isEqualTo(outcome);
        assertReleased("a");
    }

    @Test
    void aSecondHolderWaitsUntilTheFirstReleases() {
        ReactiveRedlock lock = lock();
        Sinks.Empty<Void> firstBody = Sinks.empty();
        Disposable first = lock.withLock("a", TTL, firstBody.asMono()).subscribe();
        awaitNodesHolding("a", N);
        StepVerifier.create(lock.withLock("a", TTL, Mono.just("second")))
                .expectSubscription()
                .then(() -> poll().until(() -> Long.parseLong(evalshaCalls(servers.get(0))) >= 3))
                .then(firstBody::tryEmitEmpty)
                .expectNext("second")
                .verifyComplete();
        assertThat(first.isDisposed()).isTrue();
    }

    private static String evalshaCalls(RedisServer server) {
        String info = server.call("INFO", "commandstats");
        return info.lines().filter(l -> l.startsWith("cmdstat_evalsha:")).findFirst()
                .map(l -> l.substring(l.indexOf("calls=") + 6, l.indexOf(',')))
                .orElse("0");
    }

    @Test
    void aRedlockLeaseHasNoFencingToken() {
        LockLease lease = lock().withLock("a", TTL, Mono::just).block(WAIT);
        assertThatThrownBy(lease::fencingToken).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("no fencing token");
        assertThat(lease.toString()).contains("fencingToken=none");
        assertThat(lease.token()).hasSize(32);
    }

    // --- nodes failing ---------------------------------------------------------------------------

    @Test
    void withTwoOfFiveNodesKilledLockingStillWorks() {
        ReactiveRedlock lock = lock();
        kill(0, 1);
        for (int i = 0; i < 3; i++) {
            StepVerifier.create(lock.withLock("a", TTL, nodesHoldingFromBody("a")))
                    .expectNext(3)
                    .verifyComplete();
            assertReleased("a");
        }
    }

    @Test
    void withThreeOfFiveNodesKilledAcquisitionFailsNamingTheQuorumAndLeavesNothingLocked() {
        ReactiveRedlock lock = lock(impatient(), PATIENT);
        kill(0, 1, 2);
        PublisherProbe<String> body = PublisherProbe.of(Mono.just("x"));
        StepVerifier.create(lock.withLock("a", TTL, body.mono()))
                .expectErrorSatisfies(e -> {
                    assertThat(e).isInstanceOf(LockAcquisitionException.class)
                            .hasMessageContaining("'a'")
                            .hasMessageContaining("got 2 of 5 nodes, needed 3 (3 failed or did not answer within 2000 ms)");
                    assertThat(((LockAcquisitionException) e).attempts()).isGreaterThan(1);
                    assertThat(e.getCause()).as("the last node error").isNotNull();
                })
                .verify(WAIT);
        body.assertWasNotSubscribed();
        awaitNodesHolding("a", 0);
    }

    @Test
    void aFailedAttemptIsReleasedOnTheNodesThatGrantedIt() {
        for (int i = 0; i < 3; i++) {
            servers.get(i).call("SET", "lock:{a}", "someone-else", "PX", "60000");
        }
        StepVerifier.create(lock(impatient(), PATIENT).withLock("a", TTL, Mono.just("x")))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockAcquisitionException.class)
                        .hasMessageContaining("needed 3 (3 held by another token)")
                        .satisfies(x -> assertThat(((LockAcquisitionException) x).reason())
                                .isEqualTo(LockAcquisitionException.Reason.BUSY)))
                .verify(WAIT);
        poll().untilAsserted(() -> assertThat(servers).extracting(s -> s.call("GET", "lock:{a}"))
                .containsExactly("someone-else", "someone-else", "someone-else", null, null));
    }

    @Test
    void aPausedNodeDoesNotHoldUpAcquisitionAndItsAbandonedGrantIsReleasedWhenItWakes() {
        ReactiveRedlock lock = lock(LockOptions.defaults(), PATIENT);
        RedisServer frozen = servers.get(0);
        frozen.pause();
        long start = System.nanoTime();
        Boolean acquiredWhileFrozen = lock.withLock("a", TTL, Mono.fromCallable(() -> {
            awaitNodesHolding("a", 4);
            return frozen.isPaused();
        }).subscribeOn(Schedulers.boundedElastic())).block(WAIT);
        System.out.printf("Redlock acquire+release with 1 of 5 nodes paused (node timeout 2000 ms): %.1f ms%n",
                (System.nanoTime() - start) / 1e6);
        assertThat(acquiredWhileFrozen).as("held on the four live nodes while the fifth was still frozen").isTrue();
        assertReleased("a");

        // The frozen node runs the abandoned acquire when it wakes, then the release queued behind it.
        frozen.resume();
        poll().until(() -> ranAnAcquireAndNowHoldsNothing(frozen, "a"));
    }

    @Test
    void aGrantThatOvertakesTheReleaseThroughTheNoscriptFallbackIsReleasedToo() {
        // Two nodes restarted without our acquire script but with the release one: there the acquire
        // needs NOSCRIPT then EVAL, so the release, sent meanwhile, runs first and the grant after it.
        ReactiveRedlock lock = lock();
        List<RedisServer> slow = servers.subList(3, 5);
        for (RedisServer node : slow) {
            node.call("SCRIPT", "FLUSH");
            node.call("SCRIPT", "LOAD", LockScripts.RELEASE.source());
            node.pause();
        }
        assertThat(lock.withLock("a", TTL, Mono.just("done")).block(WAIT)).isEqualTo("done");
        slow.forEach(RedisServer::resume);

        poll().until(() -> slow.stream().allMatch(node -> ranAnAcquireAndNowHoldsNothing(node, "a")));
        awaitNodesHolding("a", 0);
    }

    @Test
    void whenTheMajorityWaitsOnAPausedNodeTheAttemptIsAbandonedAtTheNodeTimeout() {
        ReactiveRedlock lock = lock(LockOptions.builder().acquireTimeout(Duration.ZERO).build(), PATIENT);
        kill(0, 1);
        RedisServer frozen = servers.get(2);
        frozen.pause();
        // The frozen node never answers before it is resumed below, so ending at all means giving up on it.
        StepVerifier.create(lock.withLock("a", TTL, Mono.just("x")))
                .expectErrorSatisfies(e -> {
                    assertThat(e).isInstanceOf(LockAcquisitionException.class)
                            .hasMessageContaining("after 1 attempt(s)")
                            .hasMessageContaining("got 2 of 5 nodes, needed 3 (3 failed or did not answer within 2000 ms)");
                    System.out.printf("Redlock attempt with 2 of 5 nodes killed and 1 paused (node timeout 2000 ms) "
                            + "failed after %d ms%n", ((LockAcquisitionException) e).waited().toMillis());
                })
                .verify(WAIT);
        awaitNodesHolding("a", 0);
        frozen.resume();
        poll().until(() -> ranAnAcquireAndNowHoldsNothing(frozen, "a"));
    }

    @Test
    void aNodeRestartedEmptyWhileTheLockIsHeldLeavesTheLockHeldByTheMajority() {
        Sinks.Empty<Void> holderBody = Sinks.empty();
        Mono<String> holder = lock().withLock("a", TTL, holderBody.asMono().thenReturn("holder done")).cache();
        holder.subscribe();
        awaitNodesHolding("a", N);

        servers.get(0).restart();
        assertThat(nodesHolding("a")).isEqualTo(4);
        StepVerifier.create(lock(impatient(), PATIENT).withLock("a", TTL, Mono.just("intruder")))
                // The round ends once the no's rule out a majority: 3 or 4 of them, and the restarted node's yes if it came first.
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockAcquisitionException.class)
                        .hasMessageContaining("needed 3 (")
                        .hasMessageContaining("held by another token")
                        .satisfies(x -> assertThat(((LockAcquisitionException) x).reason())
                                .isEqualTo(LockAcquisitionException.Reason.BUSY)))
                .verify(WAIT);

        holderBody.tryEmitEmpty();
        StepVerifier.create(holder).expectNext("holder done").verifyComplete();
        awaitNodesHolding("a", 0);
    }

    // --- cancellation ----------------------------------------------------------------------------

    @Test
    void cancellingWhileTheBodyRunsCancelsItAndReleasesOnEveryNode() {
        PublisherProbe<Object> body = PublisherProbe.of(Mono.never());
        Disposable running = lock().withLock("a", TTL, body.mono()).subscribe();
        awaitNodesHolding("a", N);
        running.dispose();
        body.assertWasCancelled();
        awaitNodesHolding("a", 0);
    }

    @Test
    void cancellingWhileAcquiringReleasesOnEveryNodeIncludingGrantsThatArriveAfterTheCancel() {
        ReactiveRedlock lock = lock(LockOptions.defaults(), new RedlockOptions(Duration.ofSeconds(30), 0.01));
        IntStream.range(0, 3).forEach(i -> servers.get(i).pause());
        PublisherProbe<Object> body = PublisherProbe.of(Mono.just("x"));
        Disposable acquiring = lock.withLock("a", TTL, body.mono()).subscribe();
        awaitNodesHolding("a", 2); // granted by the two live nodes, the majority waits on the frozen three
        acquiring.dispose();
        awaitNodesHolding("a", 0);

        IntStream.range(0, 3).forEach(i -> servers.get(i).resume());
        poll().until(() -> servers.stream().allMatch(s -> ranAnAcquireAndNowHoldsNothing(s, "a")));
        body.assertWasNotSubscribed();
    }

    @Test
    void acquisitionsCancelledAtRandomMomentsLeaveNoLockOnAnyNode() {
        ReactiveRedlock lock = lock(LockOptions.builder().backoff(Duration.ofMillis(1), Duration.ofMillis(5)).build(), PATIENT);
        AtomicInteger bodiesRun = new AtomicInteger();
        AtomicInteger completed = new AtomicInteger();
        Flux.range(0, 1_000)
                .flatMap(i -> {
                    ThreadLocalRandom random = ThreadLocalRandom.current();
                    Duration cancelAfter = Duration.ofNanos(random.nextInt(2_000_000));
                    Sinks.Empty<Void> bodyStarted = Sinks.empty();
                    Mono<String> body = Mono.delay(Duration.ofNanos(random.nextInt(2_000_000)))
                            .doOnSubscribe(sub -> {
                                bodiesRun.incrementAndGet();
                                bodyStarted.tryEmitEmpty();
                            })
                            .thenReturn("done");
                    // Half are cancelled counting from the call (mostly while acquiring), half counting
                    // from the body's start: during the body, or after it, during the release.
                    Mono<Long> cancel = (i % 2 == 0 ? Mono.<Void>empty() : bodyStarted.asMono())
                            .then(Mono.delay(cancelAfter));
                    return lock.withLock("storm:" + random.nextInt(8), TTL, body)
                            .doOnSuccess(v -> completed.incrementAndGet())
                            .takeUntilOther(cancel)
                            .onErrorResume(LockAcquisitionException.class, e -> Mono.empty());
                }, 32)
                .then()
                .block(Duration.ofMinutes(1));

        poll().untilAsserted(() -> assertThat(servers)
                .extracting(s -> s.call("EVAL", "return #redis.call('KEYS', 'lock:{storm:*}')", "0"))
                .as("lock keys left on each node").containsOnly("0"));
        assertThat(bodiesRun).as("some bodies ran, so cancels also hit held locks").hasPositiveValue();
        assertThat(completed.get()).as("some cancels came too late, so they hit releases").isPositive().isLessThan(1_000);
    }

    // --- renewal ---------------------------------------------------------------------------------

    @Test
    void renewalKeepsTheLockOnTheLiveMajorityWhileTheBodyOutlivesTheTtl() {
        ReactiveRedlock lock = lock(LockOptions.defaults(), QUICK);
        kill(0, 1);
        Mono<Integer> longBody = Mono.delay(SHORT_TTL.multipliedBy(3)).then(nodesHoldingFromBody("a"));
        StepVerifier.create(lock.withLock("a", SHORT_TTL, longBody))
                .expectNext(3)
                .verifyComplete();
    }

    @Test
    void renewalThatFindsTheLockGoneFromAMajorityCancelsTheBodyWithLockLostException() {
        PublisherProbe<Object> body = PublisherProbe.of(Mono.never());
        StepVerifier.create(lock(LockOptions.defaults(), QUICK).withLock("a", SHORT_TTL, body.mono()))
                .expectSubscription()
                .then(() -> awaitNodesHolding("a", N))
                .then(() -> IntStream.range(0, 3).forEach(i -> servers.get(i).call("DEL", "lock:{a}")))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockLostException.class)
                        .hasMessageContaining("'a'")
                        .hasMessageContaining("renewal kept it on only 2 of 5 nodes, needed 3 (3 no longer held by this token)"))
                .verify(WAIT);
        body.assertWasCancelled();
        awaitNodesHolding("a", 0);
    }

    @Test
    void renewalThatCannotReachAMajorityCancelsTheBodyWithLockLostExceptionWhenTheLeaseRunsOut() {
        PublisherProbe<Object> body = PublisherProbe.of(Mono.never());
        StepVerifier.create(lock(LockOptions.defaults(), QUICK).withLock("a", SHORT_TTL, body.mono()))
                .expectSubscription()
                .then(() -> awaitNodesHolding("a", N))
                .then(() -> kill(0, 1, 2))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockLostException.class)
                        .hasMessageContaining("could not renew it before the lease ran out")
                        .hasMessageContaining("2 of 5 nodes, needed 3"))
                .verify(WAIT);
        body.assertWasCancelled();
        awaitNodesHolding("a", 0);
    }

    @Test
    void reachingTheMaximumLeaseTimeCancelsTheBodyAndReleasesOnEveryNode() {
        ReactiveRedlock capped = lock(LockOptions.builder().maxLeaseTime(Duration.ofMillis(1500)).build(), QUICK);
        PublisherProbe<Object> body = PublisherProbe.of(Mono.never());
        StepVerifier.create(capped.withLock("a", SHORT_TTL, body.mono()))
                .expectError(LeaseTimeExceededException.class)
                .verify(WAIT);
        body.assertWasCancelled();
        assertReleased("a");
    }

    // --- arguments and lifecycle -----------------------------------------------------------------

    @Test
    void fewerThanThreeNodesAreRejected() {
        assertThatThrownBy(() -> ReactiveRedlock.create(uris().subList(0, 1), LockOptions.defaults()))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("Redlock needs at least 3 nodes, got 1");
    }

    @Test
    void anEvenNumberOfNodesIsRejected() {
        assertThatThrownBy(() -> ReactiveRedlock.create(uris().subList(0, 4), LockOptions.defaults()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("needs an odd number of nodes")
                .hasMessageContaining("got 4");
    }

    @Test
    void theSameServerTwiceIsRejectedWhateverTheCaseOfItsHostName() {
        int port = servers.get(0).port();
        List<RedisURI> twice = List.of(RedisURI.create("redis://localhost:" + port),
                RedisURI.create("redis://LOCALHOST:" + port), servers.get(1).uri());
        assertThatThrownBy(() -> ReactiveRedlock.create(twice, LockOptions.defaults()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Redlock nodes must be distinct servers, but localhost:" + port + " is given twice");
    }

    @Test
    void badRedlockOptionsAreRejected() {
        assertThatThrownBy(() -> new RedlockOptions(Duration.ZERO, 0.01))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("nodeTimeout must be positive");
        assertThatThrownBy(() -> new RedlockOptions(Duration.ofMillis(50), 0.5))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("clockDriftFactor");
    }

    @Test
    void aTtlNotAboveTheNodeTimeoutPlusDriftIsRejectedAtCallTime() {
        ReactiveRedlock lock = lock(LockOptions.defaults(), new RedlockOptions(Duration.ofMillis(200), 0.01));
        assertThatThrownBy(() -> lock.withLock("a", Duration.ofMillis(201), Mono.just("x")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("must exceed the node timeout");
        assertThatThrownBy(() -> lock.withLock("", TTL, Mono.just("x"))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> lock.withLock("a", TTL, (Mono<String>) null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void closingEndsTheThreadsOfItsConnections() {
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        ReactiveRedlock lock = lock();
        StepVerifier.create(lock.withLock("a", TTL, Mono.just("x"))).expectNext("x").expectComplete().verify(WAIT);
        assertThat(lettuceThreadsSince(before)).as("the lock's client threads").isNotEmpty();
        lock.close();
        poll().untilAsserted(() -> assertThat(lettuceThreadsSince(before)).as("threads left after close").isEmpty());
    }

    private static List<String> lettuceThreadsSince(Set<Thread> before) {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> !before.contains(t) && t.getName().startsWith("lettuce-"))
                .map(Thread::getName).toList();
    }

    @Test
    void closingCancelsARunningBodyAndReleasesItsLockOnEveryNodeBeforeTheConnectionsClose() {
        ReactiveRedlock lock = lock();
        StepVerifier body = StepVerifier.create(lock.withLock("report", Duration.ofMinutes(5), lease -> Mono.never()))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockLostException.class)
                        .hasMessageContaining("the client was closed while the body held it"))
                .verifyLater();
        poll().until(() -> lock.activeLeases() == 1);
        assertThat(nodesHolding("report")).as("nodes holding it before close").isEqualTo(N);

        lock.close();

        assertThat(servers).as("PTTL of the lock on each node once close() returned: gone")
                .allSatisfy(node -> assertThat(node.call("PTTL", "lock:{report}")).isEqualTo("-2"));
        body.verify(WAIT);
    }

    /**
     * A release counts as done once a majority answered it; the connections close only once the
     * other nodes answered too. The last node holds its reply back (paused for writes) while the
     * majority answers at once: closing the connections then would drop its release, and the lock
     * would stay there for its 5 minutes.
     */
    @Test
    void closingWaitsForTheReleaseOnEveryNodeNotOnlyOnAMajority() {
        ReactiveRedlock lock = lock();
        StepVerifier body = StepVerifier.create(lock.withLock("report", Duration.ofMinutes(5), lease -> Mono.never()))
                .expectError(LockLostException.class)
                .verifyLater();
        poll().until(() -> lock.activeLeases() == 1);
        servers.get(N - 1).call("CLIENT", "PAUSE", "500", "WRITE");

        lock.close();

        assertThat(servers).as("PTTL of the lock on each node once close() returned: gone")
                .allSatisfy(node -> assertThat(node.call("PTTL", "lock:{report}")).isEqualTo("-2"));
        body.verify(WAIT);
    }

    @Test
    void afterCloseNewLocksFail() {
        ReactiveRedlock lock = lock();
        lock.close();
        StepVerifier.create(lock.withLock("a", TTL, Mono.just("x")))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(io.reactivelock.LockClosedException.class)
                        .hasMessageContaining("closed"))
                .verify(WAIT);
    }
}
