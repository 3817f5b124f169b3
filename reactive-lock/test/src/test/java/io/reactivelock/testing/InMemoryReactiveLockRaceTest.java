package io.reactivelock.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.util.RaceTestUtils;

/** The in-memory lock's compare-and-set state under cancels that race grants and hand-offs. */
class InMemoryReactiveLockRaceTest {

    private static final Duration TTL = Duration.ofMinutes(1);
    private static final int ROUNDS = 500;

    private final InMemoryReactiveLock locks = InMemoryReactiveLock.create();

    @Test
    void aWaiterCancelledWhileTheHolderHandsItTheLockLeavesNothingLocked() {
        for (int i = 0; i < ROUNDS; i++) {
            Sinks.Empty<Void> holder = Sinks.empty();
            Disposable holding = locks.withLock("a", TTL, holder.asMono()).subscribe();
            Disposable waiting = locks.withLock("a", TTL, Mono.never()).subscribe();
            RaceTestUtils.race(holder::tryEmitEmpty, waiting::dispose);
            Eventually.until(Duration.ofSeconds(5), () -> !locks.isLocked("a"));
            holding.dispose();
        }
        assertThat(locks.lockedNames()).isEmpty();
    }

    @Test
    void anAcquisitionCancelledAsAnotherIsGrantedLeavesNothingLocked() {
        for (int i = 0; i < ROUNDS; i++) {
            Mono<Object> body = Mono.never();
            Disposable first = locks.withLock("b", TTL, body).subscribe();
            Disposable[] second = new Disposable[1];
            RaceTestUtils.race(first::dispose, () -> second[0] = locks.withLock("b", TTL, body).subscribe());
            // The second gets the lock, at once or handed over by the first as it leaves.
            Eventually.until(Duration.ofSeconds(5), () -> locks.isLocked("b"));
            second[0].dispose();
            Eventually.until(Duration.ofSeconds(5), () -> !locks.isLocked("b"));
        }
        assertThat(locks.lockedNames()).isEmpty();
    }
}
