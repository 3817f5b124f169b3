package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockOptions;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.TcpProxy;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

/**
 * Issue 13: background releases are coalesced per lock name. During an outage, every cancelled
 * acquisition that sent an attempt must be released later; however many there are, one lock
 * instance keeps one release loop per name (one round of commands and one timer at a time), and
 * the loops drain once Redis is back.
 */
@WithRedis
class BackgroundReleaseTest {

    private static final int NAMES = 4;

    @Test
    void anOutageWithCancelChurnKeepsOneReleaseLoopPerNameAndDrainsWhenRedisIsBack(RedisServer redis) {
        ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(),
                LockOptions.builder().backoff(Duration.ofMillis(1), Duration.ofMillis(50)).build());
        try {
            redis.stop();
            AtomicInteger abandoned = new AtomicInteger();
            Flux.range(0, 2_000)
                    .flatMap(i -> lock.withLock("churn:" + i % NAMES, Duration.ofMinutes(1), Mono.just(i))
                            .doOnCancel(abandoned::incrementAndGet)
                            .take(Duration.ofMillis(5))
                            .onErrorResume(LockAcquisitionException.class, e -> Mono.empty()), 64)
                    .then()
                    .block(Duration.ofMinutes(1));
            assertThat(abandoned).as("acquisitions cancelled during the outage").hasPositiveValue();
            assertThat(lock.namesReleasingInBackground()).as("release loops").isBetween(1, NAMES);
            assertThat(lock.releaseRetryTimers()).as("retry timers armed, one per name at most").isBetween(1, NAMES);

            // Restarted empty: nothing was granted, so there is nothing to find left (the test below
            // has grants to release); the loops must still drain.
            redis.restart();
            await().atMost(Duration.ofSeconds(30)).until(() -> lock.namesReleasingInBackground() == 0);
            StepVerifier.create(lock.withLock("churn:0", Duration.ofMinutes(1), Mono.just("after")))
                    .expectNext("after").verifyComplete();
        } finally {
            lock.close();
        }
    }

    /**
     * A holder's release that fails (Redis out of reach: connections cut and refused) is left to the
     * background, whose loop retries it while the lease it would free lasts: once Redis is in reach
     * again, a retry deletes the lock, long before its minute-long TTL would have.
     */
    @Test
    void aReleaseThatFailedIsRetriedInTheBackgroundUntilItDeletesTheLock(RedisServer redis) {
        try (TcpProxy proxy = TcpProxy.to(redis);
                ReactiveRedisLock lock = ReactiveRedisLock.create(proxy.uri(), LockOptions.builder()
                        .backoff(Duration.ofMillis(1), Duration.ofMillis(50)).commandTimeout(Duration.ofMillis(200)).build())) {
            Sinks.Empty<Void> body = Sinks.empty();
            lock.withLock("retried", Duration.ofMinutes(1), body.asMono()).subscribe(value -> {}, error -> {});
            await().until(() -> "1".equals(redis.call("EXISTS", "lock:{retried}")));

            proxy.refuseConnections(true);
            proxy.cutConnections();
            body.tryEmitEmpty();
            await().atMost(Duration.ofSeconds(10)).until(() -> lock.releaseRetryTimers() == 1);
            assertThat(redis.call("EXISTS", "lock:{retried}")).as("the lock, while its release fails").isEqualTo("1");

            proxy.refuseConnections(false);
            // Lettuce reconnects within seconds; the loop's next round, a longest backoff step later, deletes the lock.
            await().atMost(Duration.ofSeconds(20)).until(() -> "0".equals(redis.call("EXISTS", "lock:{retried}")));
            await().atMost(Duration.ofSeconds(10)).until(() -> lock.namesReleasingInBackground() == 0);
        }
    }

    /**
     * A background release is retried until the lease it would free has run out, then given up:
     * with Redis down for good, the loop lasts at least the TTL from the cancel, and ends soon after.
     */
    @Test
    void aBackgroundReleaseIsRetriedUntilTheTtlWouldHaveEndedThenGivenUp(RedisServer redis) {
        Duration ttl = Duration.ofSeconds(2);
        ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                .backoff(Duration.ofMillis(1), Duration.ofMillis(50)).commandTimeout(Duration.ofMillis(200)).build());
        try {
            redis.stop();
            long start = System.nanoTime();
            // Cancelled while its attempt waits for a Redis that is down: released in the background.
            lock.withLock("gone", ttl, Mono.just(1)).take(Duration.ofMillis(100))
                    .onErrorResume(LockAcquisitionException.class, e -> Mono.empty()).block(Duration.ofSeconds(10));
            assertThat(lock.namesReleasingInBackground()).as("release loops after the cancel").isEqualTo(1);

            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10))
                    .until(() -> lock.namesReleasingInBackground() == 0);
            Duration lasted = Duration.ofNanos(System.nanoTime() - start);
            // Given up at the first failed retry past the TTL: one command timeout and one backoff step
            // later at most, with a second of slack for a loaded machine.
            assertThat(lasted).as("how long the release was retried").isGreaterThanOrEqualTo(ttl)
                    .isLessThan(ttl.plusMillis(200 + 50).plusSeconds(1));
        } finally {
            lock.close();
        }
    }

    /**
     * Redis frozen rather than down: the attempts of the cancelled acquisitions sit in the socket,
     * and once it resumes, grants land for the first of each name. The background releases that
     * piled up behind them must delete every one, well before the 10-minute TTL would.
     */
    @Test
    void theGrantsOfAcquisitionsCancelledWhileRedisWasFrozenAreReleasedWhenItResumes(RedisServer redis) {
        ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                .backoff(Duration.ofMillis(1), Duration.ofMillis(50)).commandTimeout(Duration.ofMillis(500)).build());
        try {
            redis.pause();
            Flux.range(0, 200)
                    .flatMap(i -> lock.withLock("frozen:" + i % NAMES, Duration.ofMinutes(10), Mono.just(i))
                            .take(Duration.ofMillis(5))
                            .onErrorResume(LockAcquisitionException.class, e -> Mono.empty()), 64)
                    .then()
                    .block(Duration.ofMinutes(1));

            redis.resume();
            await().atMost(Duration.ofSeconds(30)).until(() -> lock.namesReleasingInBackground() == 0);
            assertThat(redis.callList("KEYS", "*")).as("keys left but fencing records")
                    .filteredOn(key -> !String.valueOf(key).endsWith(":fence")).isEmpty();
            assertThat(redis.callList("KEYS", "*")).as("the grants that landed left their fencing records").isNotEmpty();
        } finally {
            lock.close();
        }
    }
}
