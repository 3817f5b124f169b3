package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reactivelock.Leadership.State;
import io.reactivelock.testing.InMemoryReactiveLock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Isolated;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * The sequence of {@link Leadership} events, on the in-memory lock and virtual time: when each
 * term starts and ends, to the millisecond, with no real time spent.
 */
@Isolated("virtual time replaces Reactor's schedulers for the whole JVM")
class LeaderElectionVirtualTimeTest {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration RENEWAL = TTL.dividedBy(3);
    private static final Duration WAIT = Duration.ofSeconds(5);

    private final InMemoryReactiveLock locks = InMemoryReactiveLock.create();

    @AfterEach
    void resetVirtualTime() {
        VirtualTimeScheduler.reset();
    }

    /** One candidate's events, each with the virtual instant it was told at. */
    private static final class Candidate {
        final List<String> told = new CopyOnWriteArrayList<>();
        final List<Leadership> events = new CopyOnWriteArrayList<>();
        final Disposable subscription;

        Candidate(VirtualTimeScheduler time, Flux<Leadership> lead) {
            subscription = lead.subscribe(l -> {
                events.add(l);
                told.add(l.state() + " " + l.term() + " at " + time.now(TimeUnit.MILLISECONDS));
            });
        }

        Leadership last() {
            return events.get(events.size() - 1);
        }
    }

    @Test
    void aLeaderWhoseLeaseIsLostIsToldAtItsNextRenewalAndIsElectedAgainForAHigherTerm() {
        StepVerifier.withVirtualTime(() -> LeaderElection.of(locks).lead("job", TTL))
                .assertNext(l -> {
                    assertThat(l.state()).isEqualTo(State.ELECTED);
                    assertThat(l.isLeader()).isTrue();
                    assertThat(l.name()).isEqualTo("job");
                    assertThat(l.term()).isEqualTo(1);
                    assertThat(l.cause()).isNull();
                })
                .then(() -> locks.expire("job"))
                .expectNoEvent(RENEWAL.minusMillis(1))
                .thenAwait(Duration.ofMillis(1))
                .assertNext(l -> {
                    assertThat(l.state()).isEqualTo(State.LOST);
                    assertThat(l.isLeader()).isFalse();
                    assertThat(l.term()).isEqualTo(1);
                    assertThat(l.cause()).isInstanceOf(LockLostException.class).hasMessageContaining("'job'");
                })
                .assertNext(l -> {
                    assertThat(l.state()).as("campaigning resumed at once").isEqualTo(State.ELECTED);
                    assertThat(l.term()).isEqualTo(2);
                })
                .thenCancel()
                .verify(WAIT);
        assertThat(locks.isLocked("job")).as("cancelled: released").isFalse();
    }

    @Test
    void aCancelledLeaderIsSucceededAtOnceByAWaitingCandidateOfAnotherInstance() {
        VirtualTimeScheduler time = VirtualTimeScheduler.getOrSet();
        Candidate a = new Candidate(time, LeaderElection.of(locks).lead("job", TTL));
        Candidate b = new Candidate(time, LeaderElection.of(locks.withOptions(LockOptions.defaults())).lead("job", TTL));
        time.advanceTimeBy(Duration.ofMinutes(5)); // within the maximum lease time (10 min)
        assertThat(a.told).containsExactly("ELECTED 1 at 0");
        assertThat(b.told).as("waits as long as the leader renews").isEmpty();

        a.subscription.dispose();
        assertThat(b.told).containsExactly("ELECTED 2 at 300000");
        assertThat(a.told).as("nothing is told after a cancel").containsExactly("ELECTED 1 at 0");
        b.subscription.dispose();
        assertThat(locks.isLocked("job")).isFalse();
    }

    @Test
    void aLeaderThatStepsDownHandsOverAndSitsOutOneTtlBeforeItCampaignsAgain() {
        VirtualTimeScheduler time = VirtualTimeScheduler.getOrSet();
        Candidate a = new Candidate(time, LeaderElection.of(locks).lead("job", TTL));
        Candidate b = new Candidate(time, LeaderElection.of(locks.withOptions(LockOptions.defaults())).lead("job", TTL));
        time.advanceTimeBy(Duration.ofSeconds(1));

        a.last().stepDown();
        assertThat(a.told).containsExactly("ELECTED 1 at 0", "STEPPED_DOWN 1 at 1000");
        assertThat(b.told).containsExactly("ELECTED 2 at 1000");
        a.last().stepDown(); // an ended term: nothing happens
        b.subscription.dispose();

        // Nobody leads until a's TTL of sitting out has passed.
        time.advanceTimeBy(TTL.minusMillis(1));
        assertThat(a.told).hasSize(2);
        time.advanceTimeBy(Duration.ofMillis(1));
        assertThat(a.told).last().isEqualTo("ELECTED 3 at 31000");
        a.subscription.dispose();
    }

    @Test
    void aTermEndsAtTheLocksMaximumLeaseTimeAndTheCandidateCampaignsAgain() {
        InMemoryReactiveLock capped = locks.withOptions(LockOptions.builder().maxLeaseTime(Duration.ofMinutes(1)).build());
        StepVerifier.withVirtualTime(() -> LeaderElection.of(capped).lead("job", TTL))
                .assertNext(l -> assertThat(l.state()).isEqualTo(State.ELECTED))
                .expectNoEvent(Duration.ofMinutes(1).minusMillis(1))
                .thenAwait(Duration.ofMillis(1))
                .assertNext(l -> {
                    assertThat(l.state()).isEqualTo(State.LOST);
                    assertThat(l.cause()).isInstanceOf(LeaseTimeExceededException.class);
                })
                .assertNext(l -> assertThat(l.state()).isEqualTo(State.ELECTED))
                .thenCancel()
                .verify(WAIT);
    }

    @Test
    void aCandidateIsElectedWhenTheLeaseOfACrashedLeaderRunsOutAndNotBefore() {
        StepVerifier.withVirtualTime(() -> {
                    locks.lockElsewhere("job", Duration.ofMinutes(5));
                    return LeaderElection.of(locks).lead("job", TTL);
                })
                .expectSubscription()
                .expectNoEvent(Duration.ofMinutes(5).minusMillis(1))
                .thenAwait(Duration.ofMillis(1))
                .assertNext(l -> assertThat(l.state()).isEqualTo(State.ELECTED))
                .thenCancel()
                .verify(WAIT);
    }

    @Test
    void theWorkRunsWhileLeaderIsCancelledWhenTheLeaseIsLostAndRunsAgainInTheNextTerm() {
        AtomicInteger cancelled = new AtomicInteger();
        StepVerifier.withVirtualTime(() -> LeaderElection.of(locks).whileLeader("job", TTL, l ->
                        Flux.interval(Duration.ofSeconds(3)).map(i -> l.term() + ":" + i).doOnCancel(cancelled::incrementAndGet)))
                .expectSubscription()
                .thenAwait(Duration.ofSeconds(9))
                .expectNext("1:0", "1:1", "1:2")
                .then(() -> locks.expire("job"))
                .thenAwait(Duration.ofSeconds(1)) // the renewal at 10 s finds the lease lost
                .then(() -> assertThat(cancelled).as("the work of term 1").hasValue(1))
                .expectNoEvent(Duration.ofMillis(2_999))
                .thenAwait(Duration.ofMillis(1))
                .expectNext("2:0")
                .thenCancel()
                .verify(WAIT);
        assertThat(cancelled).as("and the work of term 2, by the subscriber's cancel").hasValue(2);
        assertThat(locks.isLocked("job")).isFalse();
    }

    @Test
    void workThatCompletesEndsTheTermAsAStepDownAndRunsAgainOneTtlLater() {
        StepVerifier.withVirtualTime(() -> LeaderElection.of(locks).whileLeader("job", TTL, l -> Mono.just(l.term())))
                .expectNext(1L)
                .then(() -> assertThat(locks.isLocked("job")).as("released when the work completed").isFalse())
                .expectNoEvent(TTL.minusMillis(1))
                .thenAwait(Duration.ofMillis(1))
                .expectNext(2L)
                .thenCancel()
                .verify(WAIT);
    }

    @Test
    void workThatFailsFailsTheFluxWithItsErrorOnceTheLockIsReleased() {
        IllegalStateException boom = new IllegalStateException("boom");
        StepVerifier.withVirtualTime(() -> LeaderElection.of(locks).whileLeader("job", TTL, l -> Flux.just("a").concatWith(Mono.error(boom))))
                .expectNext("a")
                .expectErrorSatisfies(e -> {
                    assertThat(e).isSameAs(boom);
                    assertThat(locks.isLocked("job")).isFalse();
                })
                .verify(WAIT);
    }

    @Test
    void aCandidateThatCannotCampaignFailsWithTheLocksErrorAndTheLeaderGoesOn() {
        VirtualTimeScheduler time = VirtualTimeScheduler.getOrSet();
        LeaderElection election = LeaderElection.of(locks.withOptions(LockOptions.builder().maxPendingAcquisitions(1).build()));
        Candidate leader = new Candidate(time, election.lead("a", TTL));
        locks.lockElsewhere("b", TTL);
        Candidate waiting = new Candidate(time, election.lead("b", TTL)); // the one pending acquisition allowed
        StepVerifier.create(election.lead("c", TTL))
                .expectError(TooManyPendingAcquisitionsException.class)
                .verify(WAIT);
        assertThat(leader.told).containsExactly("ELECTED 1 at 0");
        assertThat(waiting.told).isEmpty();
        List.of(leader, waiting).forEach(c -> c.subscription.dispose());
    }

    @Test
    void badArgumentsAreRejectedAtCallTimeAndNothingIsLocked() {
        LeaderElection election = LeaderElection.of(locks);
        assertThatThrownBy(() -> LeaderElection.of(null)).isInstanceOf(NullPointerException.class).hasMessage("lock");
        assertThatThrownBy(() -> election.lead(null, TTL)).isInstanceOf(NullPointerException.class).hasMessage("name");
        assertThatThrownBy(() -> election.lead("", TTL)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1 to 512 characters");
        assertThatThrownBy(() -> election.lead("job", null)).isInstanceOf(NullPointerException.class).hasMessage("ttl");
        assertThatThrownBy(() -> election.lead("job", Duration.ofMillis(99))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at least 100 ms");
        assertThatThrownBy(() -> election.whileLeader("job", TTL, null)).isInstanceOf(NullPointerException.class)
                .hasMessage("work");
        StepVerifier.create(election.whileLeader("job", TTL, l -> null))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(NullPointerException.class)
                        .hasMessage("the work function returned null"))
                .verify(WAIT);
        assertThat(locks.lockedNames()).isEmpty();
    }
}
