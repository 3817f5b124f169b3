package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisURI;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockAcquisitionException.Reason;
import io.reactivelock.LockClosedException;
import io.reactivelock.LockListener;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.support.RecordingListener;
import io.reactivelock.support.RedisServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

/** What a {@link LockListener} hears from a {@link ReactiveRedlock} over five real Redis servers. */
class RedlockListenerTest {

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
    private final RecordingListener events = new RecordingListener();

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
    void emptyServers() {
        servers.forEach(server -> server.call("FLUSHALL"));
    }

    @AfterEach
    void closeLocks() {
        locks.forEach(ReactiveRedlock::close);
    }

    /** A lock that fails at once on a busy name and reports to {@link #events}. */
    private ReactiveRedlock lock(RedlockOptions redlock) {
        ReactiveRedlock lock = ReactiveRedlock.create(servers.stream().map(RedisServer::uri).toList(),
                LockOptions.builder().acquireTimeout(Duration.ZERO).listener(events).build(), redlock);
        locks.add(lock);
        return lock;
    }

    private static ConditionFactory poll() {
        return await().atMost(WAIT).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(10));
    }

    @Test
    void aBodyThatCompletesIsHeardAsAcquiredThenReleased() {
        StepVerifier.create(lock(PATIENT).withLock("a", TTL, Mono.just(1))).expectNext(1).verifyComplete();
        assertThat(events.list).containsExactly("acquired a", "released a");
    }

    @Test
    void aLockHeldOnEveryNodeIsHeardAsAnAcquireFailureWithoutCause() {
        ReactiveRedlock lock = lock(PATIENT);
        Sinks.Empty<Void> finish = Sinks.empty();
        Disposable holder = lock.withLock("a", TTL, finish.asMono()).subscribe();
        poll().until(() -> events.list.contains("acquired a"));

        StepVerifier.create(lock.withLock("a", TTL, Mono.just(1))).expectError(LockAcquisitionException.class).verify(WAIT);
        assertThat(events.failures).singleElement()
                .satisfies(e -> assertThat(e).isInstanceOf(LockAcquisitionException.class).hasNoCause());

        finish.tryEmitEmpty();
        poll().until(() -> events.list.contains("released a"));
        assertThat(events.list).containsExactly("acquired a", "acquireFailed a", "released a");
        holder.dispose();
    }

    @Test
    void aTtlNotAboveTheNodeTimeoutIsHeardAsAnAcquireFailureBeforeItIsThrown() {
        assertThatThrownBy(() -> lock(PATIENT).withLock("a", Duration.ofSeconds(2), Mono.just(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("node timeout");
        assertThat(events.list).containsExactly("acquireFailed a");
        assertThat(events.failures).singleElement().isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aLockRequestedAfterCloseIsHeardAsAnAcquireFailure() {
        ReactiveRedlock lock = lock(PATIENT);
        lock.close();
        StepVerifier.create(lock.withLock("a", TTL, Mono.just(1))).verifyError(LockClosedException.class);
        assertThat(events.list).containsExactly("acquireFailed a");
        assertThat(events.failures).singleElement().isInstanceOf(LockClosedException.class)
                .satisfies(e -> assertThat(((LockClosedException) e).reason()).isEqualTo(Reason.CLOSED));
    }

    /**
     * Issue 13: with one of five nodes silent and the lock held on the other four, the no's alone
     * rule out a majority: the lock is busy, not a Redis failure, whatever the silent node says.
     */
    @Test
    void aLockHeldByAnotherOnTheNodesThatAnswerIsBusyEvenWithAFailedNode() {
        ReactiveRedlock lock = lock(QUICK);
        Sinks.Empty<Void> finish = Sinks.empty();
        Disposable holder = lock.withLock("a", TTL, finish.asMono()).subscribe();
        poll().until(() -> events.list.contains("acquired a"));
        RedisServer silent = servers.get(4);
        silent.pause();
        try {
            StepVerifier.create(lock.withLock("a", TTL, Mono.just(1)))
                    .expectErrorSatisfies(e -> assertThat(((LockAcquisitionException) e).reason()).isEqualTo(Reason.BUSY))
                    .verify(WAIT);
        } finally {
            silent.resume();
        }
        assertThat(events.failures).singleElement()
                .satisfies(e -> assertThat(((LockAcquisitionException) e).reason()).isEqualTo(Reason.BUSY));
        finish.tryEmitEmpty();
        holder.dispose();
    }

    /** With three of five nodes silent, no majority can answer: the reason says so, with the nodes' error. */
    @Test
    void tooManySilentNodesIsAQuorumNotReached() {
        ReactiveRedlock lock = lock(QUICK);
        servers.subList(2, 5).forEach(RedisServer::pause);
        try {
            StepVerifier.create(lock.withLock("a", TTL, Mono.just(1)))
                    .expectErrorSatisfies(e -> assertThat(((LockAcquisitionException) e).reason())
                            .isEqualTo(Reason.QUORUM_NOT_REACHED))
                    .verify(WAIT);
        } finally {
            servers.subList(2, 5).forEach(RedisServer::resume);
        }
    }

    @Test
    void renewalsOnAMajorityAreHeardWhileTheBodyRuns() {
        Sinks.Empty<Void> finish = Sinks.empty();
        Disposable holder = lock(QUICK).withLock("a", SHORT_TTL, finish.asMono()).subscribe();
        poll().until(() -> events.list.stream().filter("renewed a"::equals).count() >= 2);
        finish.tryEmitEmpty();
        poll().until(() -> events.list.contains("released a"));
        assertThat(events.list).first().isEqualTo("acquired a");
        holder.dispose();
    }

    @Test
    void aLockTakenAwayFromEveryNodeIsHeardAsLostBeforeTheRelease() {
        StepVerifier.create(lock(QUICK).withLock("a", SHORT_TTL, Mono.never()))
                .expectSubscription()
                .then(() -> {
                    poll().until(() -> events.list.contains("acquired a"));
                    servers.forEach(server -> server.call("DEL", "lock:{a}")); // another party breaks the lock
                })
                .expectError(LockLostException.class)
                .verify(WAIT);
        assertThat(events.list).filteredOn(e -> !e.startsWith("renewed"))
                .containsExactly("acquired a", "lost a", "released a");
        assertThat(events.lost).singleElement().isInstanceOf(LockLostException.class);
    }

}
