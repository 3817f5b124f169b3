package io.reactivelock.faults;

import static io.reactivelock.faults.Faults.report;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.CancelStorm;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Fault 9: 10,000 {@code withLock} subscriptions, 64 in flight, cancelled at random points (while
 * acquiring, in the body, while releasing). Within a second of the storm no lock key is left and
 * no renewal is running ({@link ReactiveRedisLock#activeLeases()}); the TTL is a minute, so that
 * is release, not expiry. Renewals run every 20 ms, so cancelled bodies really had watchdogs.
 * {@code CancellationSafetyTest} covers the fair mode and the cancel-versus-completion race.
 */
@WithRedis
class CancelStormTest {

    private static final int SUBSCRIPTIONS = 10_000;
    private static final int IN_FLIGHT = 64;

    @Test
    void aCancelStormLeavesNoLockAndNoRenewalRunningWithinTenSeconds(RedisServer redis) {
        ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                .backoff(Duration.ofMillis(1), Duration.ofMillis(5)).renewalInterval(Duration.ofMillis(20)).build());
        AtomicInteger mostLeasesAtOnce = new AtomicInteger();
        AtomicInteger bodiesCut = new AtomicInteger();
        try {
            long start = System.nanoTime();
            Flux.range(0, SUBSCRIPTIONS)
                    .flatMap(i -> {
                        ThreadLocalRandom random = ThreadLocalRandom.current();
                        return CancelStorm.acquisition(i, 60, 80, bodiesCut, body -> lock.withLock("storm:" + random.nextInt(32),
                                        Duration.ofMinutes(1),
                                        body.doOnSubscribe(s -> mostLeasesAtOnce.accumulateAndGet(lock.activeLeases(), Math::max))))
                                .onErrorResume(LockAcquisitionException.class, e -> Mono.empty());
                    }, IN_FLIGHT)
                    .then()
                    .block(Duration.ofMinutes(2));
            long stormEnded = System.nanoTime();

            // The TTL is a minute: what is gone within 10 s was released, not expired. Not 1 s: at load 10
            // to 15 on 2 cores, lock keys were still being created 450 ms after the storm ended (Redis
            // running attempts sent before it ended, their grants released once their replies came),
            // and the last was gone 1.6 s after it.
            await().atMost(Duration.ofSeconds(10)).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(10))
                    .untilAsserted(() -> {
                        assertThat(lock.activeLeases()).as("renewals running").isZero();
                        assertThat(Faults.lockKeys(redis)).as("lock keys left").isZero();
                    });
            report("fault 9 cancel storm", SUBSCRIPTIONS + " subscriptions in "
                    + Duration.ofNanos(stormEnded - start).toMillis() + " ms; clean (no key, no renewal) "
                    + Faults.millisSince(stormEnded) + " ms after; most leases at once " + mostLeasesAtOnce.get());
            assertThat(mostLeasesAtOnce.get()).as("bodies with watchdogs were running").isPositive();
            assertThat(bodiesCut).as("cancels also hit running bodies").hasPositiveValue();
        } finally {
            lock.close();
        }
    }
}
