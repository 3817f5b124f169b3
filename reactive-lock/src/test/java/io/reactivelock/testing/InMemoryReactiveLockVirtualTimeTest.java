package io.reactivelock.testing;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.LeaseTimeExceededException;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import reactor.test.publisher.PublisherProbe;

/**
 * How a user tests their own code that takes a lock: hand it an {@link InMemoryReactiveLock} and
 * drive time with {@code StepVerifier.withVirtualTime}; minutes of leases pass in milliseconds.
 * Only public API is used here, as in a user's test.
 */
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
    void theLeaseIsRenewedForAsLongAsTheBodyRunsPastItsTtl() {
        StepVerifier.withVirtualTime(() -> new ReportJob(locks, Mono.delay(Duration.ofMinutes(5)).thenReturn("report")).run())
                .expectSubscription()
                .thenAwait(Duration.ofMinutes(4))
                .then(() -> assertThat(locks.isLocked("report")).isTrue())
                .thenAwait(Duration.ofMinutes(1))
                .expectNext("report")
                .verifyComplete();
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
    void aLeaseForCodeThatTakesOneDirectlyCarriesTheGivenValues() {
        LockLease lease = InMemoryReactiveLock.lease("order:42", 7, TTL);
        assertThat(lease.name()).isEqualTo("order:42");
        assertThat(lease.fencingToken()).isEqualTo(7);
        assertThat(lease.token()).hasSize(32);
        assertThat(lease.remaining()).isPositive().isLessThanOrEqualTo(TTL);
    }
}
