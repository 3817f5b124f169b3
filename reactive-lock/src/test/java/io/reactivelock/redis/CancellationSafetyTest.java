package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Flux;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.util.RaceTestUtils;

/**
 * Thousands of acquisitions cancelled at random moments (before the command is sent, while it
 * is in flight, after the grant, while the body runs, while releasing) leave no lock behind. The
 * TTL is a minute, so a key that disappears within seconds was released, not expired.
 */
@WithRedis
class CancellationSafetyTest {

    private static final int SUBSCRIPTIONS = 5_000;
    private static final int IN_FLIGHT = 64;
    private static final int NAMES = 16;

    @ParameterizedTest(name = "fair={0}")
    @ValueSource(booleans = {false, true})
    void acquisitionsCancelledAtRandomMomentsLeaveNoLockBehind(boolean fair, RedisServer redis) {
        ReactiveRedisLock client = ReactiveRedisLock.create(redis.uri(),
                LockOptions.builder().backoff(Duration.ofMillis(1), Duration.ofMillis(5)).build());
        ReactiveLock lock = fair ? client.fair() : client;
        AtomicInteger bodiesRun = new AtomicInteger();
        AtomicInteger completed = new AtomicInteger();
        try {
            Flux.range(0, SUBSCRIPTIONS)
                    .flatMap(i -> {
                        ThreadLocalRandom random = ThreadLocalRandom.current();
                        Mono<String> body = Mono.delay(Duration.ofNanos(random.nextInt(2_000_000)))
                                .doOnSubscribe(s -> bodiesRun.incrementAndGet())
                                .thenReturn("done");
                        return lock.withLock("storm:" + random.nextInt(NAMES), Duration.ofMinutes(1), body)
                                .doOnSuccess(v -> completed.incrementAndGet())
                                // take(Duration) cancels the upstream when the random moment comes: half of
                                // them early (acquire phases), half later (bodies and releases).
                                .take(Duration.ofNanos(random.nextInt(i % 2 == 0 ? 5_000_000 : 200_000_000)))
                                .onErrorResume(LockAcquisitionException.class, e -> Mono.empty());
                    }, IN_FLIGHT)
                    .then()
                    .block(Duration.ofMinutes(1));

            await().atMost(Duration.ofSeconds(5)).untilAsserted(() ->
                    assertThat(redis.call("EVAL", "return #redis.call('KEYS', 'lock:{storm:*}')", "0"))
                            .as("lock keys left after the storm").isEqualTo("0"));
            await().atMost(Duration.ofSeconds(5)).untilAsserted(() ->
                    assertThat(redis.call("EVAL", "return #redis.call('KEYS', 'lock:{storm:*}:queue')", "0"))
                            .as("fair lines left after the storm").isEqualTo("0"));
            assertThat(bodiesRun).as("some bodies ran, so cancels also hit held locks").hasPositiveValue();
            assertThat(completed.get()).as("some cancels came too late, so they hit releases")
                    .isPositive().isLessThan(SUBSCRIPTIONS);
        } finally {
            client.close();
        }
    }

    /**
     * Issue 13's fair-mode defect: a waiter cancelled while it joins the line must leave it at
     * once. A holder keeps the lock, so each of 10,000 acquisitions joins the line (or is about to)
     * when it is cancelled. The waiter lease is 50 s (max backoff 10 s), so a line that empties
     * within 10 s was emptied by the leaves, not by expiry (on a busy 2-core machine the 10,000
     * leaves themselves take seconds: 5,663 tokens were left 2 s after a storm beside two busy
     * loops); then the one live waiter gets the lock as soon as the holder releases, without
     * waiting out a dead token's lease.
     */
    @Test
    void aStormOfCancelledFairWaitersLeavesTheLineEmptyRightAway(RedisServer redis) throws Exception {
        LockOptions options = LockOptions.builder().backoff(Duration.ofMillis(1), Duration.ofSeconds(10)).build();
        ReactiveRedisLock holderClient = ReactiveRedisLock.create(redis.uri(), options);
        ReactiveRedisLock stormClient = ReactiveRedisLock.create(redis.uri(), options);
        try {
            ReactiveLock holderLock = holderClient.fair();
            ReactiveLock stormLock = stormClient.fair();
            Sinks.Empty<Void> holder = Sinks.empty();
            Disposable holding = holderLock.withLock("line", Duration.ofMinutes(1), holder.asMono()).subscribe();
            await().until(() -> "1".equals(redis.call("EXISTS", "lock:{line}")));
            Flux.range(0, 10_000)
                    .flatMap(i -> stormLock.withLock("line", Duration.ofMinutes(1), Mono.just(i))
                            .take(Duration.ofNanos(ThreadLocalRandom.current().nextInt(3_000_000)))
                            .onErrorResume(LockAcquisitionException.class, e -> Mono.empty()), IN_FLIGHT)
                    .then()
                    .block(Duration.ofMinutes(1));

            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10)).untilAsserted(() -> {
                assertThat(redis.call("LLEN", "lock:{line}:queue")).as("tokens left in the line").isEqualTo("0");
                assertThat(redis.call("HLEN", "lock:{line}:waiters")).as("waiter leases left").isEqualTo("0");
            });
            CompletableFuture<Integer> live = stormLock.withLock("line", Duration.ofMinutes(1), Mono.just(1)).toFuture();
            await().until(() -> "1".equals(redis.call("LLEN", "lock:{line}:queue")));
            long released = System.nanoTime();
            holder.tryEmitEmpty();
            assertThat(live.get(5, TimeUnit.SECONDS)).isEqualTo(1);
            assertThat(Duration.ofNanos(System.nanoTime() - released))
                    .as("the live waiter is first in line, not behind a dead token's 50 s waiter lease")
                    .isLessThan(Duration.ofSeconds(5));
            holding.dispose();
        } finally {
            holderClient.close();
            stormClient.close();
        }
    }

    @Test
    void cancelRacingTheBodysCompletionReleasesExactlyOnceAndLeavesNoLock(RedisServer redis) {
        ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri());
        try {
            for (int i = 0; i < 200; i++) {
                Sinks.Empty<Void> body = Sinks.empty();
                Disposable running = lock.withLock("race", Duration.ofMinutes(1), body.asMono()).subscribe();
                await().pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(2))
                        .until(() -> "1".equals(redis.call("EXISTS", "lock:{race}")));
                RaceTestUtils.race(running::dispose, body::tryEmitEmpty);
                await().pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(2)).atMost(Duration.ofSeconds(5))
                        .until(() -> "0".equals(redis.call("EXISTS", "lock:{race}")));
            }
        } finally {
            lock.close();
        }
    }

    @ParameterizedTest(name = "fair={0}")
    @ValueSource(booleans = {false, true})
    void aWaiterCancelledWhileTheHolderHandsItTheLockLeavesNoLock(boolean fair, RedisServer redis) {
        ReactiveRedisLock client = ReactiveRedisLock.create(redis.uri());
        ReactiveLock lock = fair ? client.fair() : client;
        try {
            for (int i = 0; i < 200; i++) {
                Sinks.Empty<Void> holder = Sinks.empty();
                Disposable holding = lock.withLock("race", Duration.ofMinutes(1), holder.asMono()).subscribe();
                await().pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(2))
                        .until(() -> "1".equals(redis.call("EXISTS", "lock:{race}")));
                Disposable waiting = lock.withLock("race", Duration.ofMinutes(1), Mono.never()).subscribe();
                await().pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(2)).until(() -> client.localWaiters("race") == 1);
                // The release hands the lock to the waiter in one script while the waiter leaves.
                RaceTestUtils.race(holder::tryEmitEmpty, waiting::dispose);
                await().pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(2)).atMost(Duration.ofSeconds(5))
                        .until(() -> "0".equals(redis.call("EXISTS", "lock:{race}")));
                holding.dispose();
            }
        } finally {
            client.close();
        }
    }
}
