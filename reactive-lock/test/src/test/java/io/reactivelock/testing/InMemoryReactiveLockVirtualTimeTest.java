package io.reactivelock.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reactivelock.LeaseTimeExceededException;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLease;
import io.reactivelock.LockListener;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Isolated;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import reactor.test.publisher.PublisherProbe;

/**
 * How a user tests their own code that takes a lock: hand it an {@link InMemoryReactiveLock} and
 * drive time with {@code StepVerifier.withVirtualTime}; minutes of leases pass in milliseconds.
 * Only public API is used here, as in a user's test.
 */
@Isolated("virtual time replaces Reactor's schedulers for the whole JVM")
class InMemoryReactiveLockVirtualTimeTest {

    private static final Duration TTL = Duration.ofSeconds(30);

    /** Stands for the user's code under test: rebuilds a report under a lock. */
    record ReportJob(ReactiveLock locks, Mono<String> build) {
        Mono<String> run() {
            return locks.withLock("report", TTL, build);
        }
    }

    private final InMemoryReactiveLock locks = InMemoryReactiveLock.create(LockOptions.builder()
            .acquireTimeout(Duration.ofSeconds(10))
            .maxLeaseTime(Duration.ofMinutes(10))
            .build());

    @Test
    void anAcquisitionFailsWithLockAcquisitionExceptionExactlyWhenTheAcquireTimeoutRunsOut() {
        PublisherProbe<String> build = PublisherProbe.of(Mono.just("report"));
        StepVerifier.withVirtualTime(() -> {
                    locks.lockElsewhere("report", Duration.ofMinutes(5));
                    return new ReportJob(locks, build.mono()).run();
                })
                .expectSubscription()
                .expectNoEvent(Duration.ofMillis(9_999))
                .thenAwait(Duration.ofMillis(1))
                .expectError(LockAcquisitionException.class)
                .verify(Duration.ofSeconds(5));
        build.assertWasNotSubscribed();
        assertThat(locks.isLocked("report")).as("the other holder keeps it").isTrue();
    }

    @Test
    void aReleaseHandsTheLockToTheWaiterAndTheListenerHearsTheHandOff() {
        AtomicInteger handOffs = new AtomicInteger();
        InMemoryReactiveLock heard = locks.withOptions(LockOptions.builder()
                .listener(new LockListener() {
                    @Override
                    public void handedOff(String name) {
                        handOffs.incrementAndGet();
                    }
                })
                .build());
        StepVerifier.withVirtualTime(() -> Mono.zip(
                        heard.withLock("report", TTL, Mono.delay(Duration.ofSeconds(5)).thenReturn("first")),
                        heard.withLock("report", TTL, Mono.just("second"))))
                .expectSubscription()
                .thenAwait(Duration.ofSeconds(5))
                .assertNext(both -> assertThat(both.getT2()).isEqualTo("second"))
                .verifyComplete();
        assertThat(handOffs).as("the first release handed the lock to the waiter; the second freed it").hasValue(1);
    }

    @Test
    void aLockLeftByACrashedHolderIsTakenWhenItsTtlRunsOut() {
        InMemoryReactiveLock patient = locks.withOptions(LockOptions.builder().acquireTimeout(Duration.ofMinutes(1)).build());
        StepVerifier.withVirtualTime(() -> {
                    locks.lockElsewhere("report", TTL);
                    return new ReportJob(patient, Mono.just("report")).run();
                })
                .expectSubscription()
                .expectNoEvent(TTL.minusMillis(1))
                .thenAwait(Duration.ofMillis(1))
                .expectNext("report")
                .verifyComplete();
        assertThat(locks.lockedNames()).isEmpty();
    }

    @Test
    void theLeaseIsRenewedEveryThirdOfItsTtlForAsLongAsTheBodyRuns() {
        AtomicInteger renewals = new AtomicInteger();
        InMemoryReactiveLock counted = locks.withOptions(LockOptions.builder()
                .maxLeaseTime(Duration.ofMinutes(10))
                .listener(new LockListener() {
                    @Override
                    public void renewed(String name) {
                        renewals.incrementAndGet();
                    }
                })
                .build());
        // 4 min 55 s: the body ends between two renewals (every 10 s).
        StepVerifier.withVirtualTime(() -> new ReportJob(counted, Mono.delay(Duration.ofSeconds(295)).thenReturn("report")).run())
                .expectSubscription()
                .thenAwait(Duration.ofMinutes(4))
                .then(() -> assertThat(renewals).as("renewals in 4 min").hasValue(24))
                .then(() -> assertThat(locks.isLocked("report")).isTrue())
                .thenAwait(Duration.ofSeconds(55))
                .expectNext("report")
                .verifyComplete();
        assertThat(renewals).as("renewals in 4 min 55 s").hasValue(29);
        assertThat(locks.isLocked("report")).isFalse();
    }

    @Test
    void anExpiredLeaseCancelsTheBodyWithLockLostExceptionAtTheNextRenewal() {
        PublisherProbe<String> build = PublisherProbe.of(Mono.never());
        StepVerifier.withVirtualTime(() -> new ReportJob(locks, build.mono()).run())
                .expectSubscription()
                .then(() -> assertThat(locks.expire("report")).isTrue())
                .expectNoEvent(TTL.dividedBy(3).minusMillis(1))
                .thenAwait(Duration.ofMillis(1))
                .expectError(LockLostException.class)
                .verify(Duration.ofSeconds(5));
        build.assertWasCancelled();
    }

    @Test
    void aBodyStillRunningAtTheMaximumLeaseTimeIsCancelledAndTheLockReleased() {
        PublisherProbe<String> build = PublisherProbe.of(Mono.never());
        StepVerifier.withVirtualTime(() -> new ReportJob(locks, build.mono()).run())
                .expectSubscription()
                .expectNoEvent(Duration.ofMinutes(10).minusMillis(1))
                .thenAwait(Duration.ofMillis(1))
                .expectError(LeaseTimeExceededException.class)
                .verify(Duration.ofSeconds(5));
        build.assertWasCancelled();
        assertThat(locks.lockedNames()).isEmpty();
    }

    @Test
    void waitersAreHandedTheLockInArrivalOrderAsEachHolderReleases() {
        StepVerifier.withVirtualTime(() -> Flux.range(1, 3)
                        .flatMap(i -> new ReportJob(locks, Mono.delay(Duration.ofSeconds(3)).thenReturn("job " + i)).run()))
                .expectSubscription()
                .expectNoEvent(Duration.ofSeconds(3))
                .expectNext("job 1")
                .expectNoEvent(Duration.ofSeconds(3))
                .expectNext("job 2")
                .expectNoEvent(Duration.ofSeconds(3))
                .expectNext("job 3")
                .verifyComplete();
    }

    @Test
    void aLeaseForCodeThatTakesOneDirectlyRunsOutAfterTheGivenTimeAndHasATokenOfItsOwn() {
        long before = System.nanoTime();
        LockLease lease = InMemoryReactiveLock.lease("order:42", 7, TTL);
        long after = System.nanoTime();
        LockLease expired = InMemoryReactiveLock.lease("order:42", 8, Duration.ZERO);

        assertThat(lease.validUntilNanos()).as("valid until").isBetween(before + TTL.toNanos(), after + TTL.toNanos());
        assertThat(expired.remaining()).as("what code checking the lease before a write sees").isZero();
        assertThat(lease.token()).as("an unguessable token, 128 bits in hex").matches("[0-9a-f]{32}")
                .isNotEqualTo(expired.token());
        assertThatThrownBy(() -> InMemoryReactiveLock.lease("\uD800", 7, TTL)).as("a name no lock accepts")
                .isInstanceOf(IllegalArgumentException.class);
    }
}
