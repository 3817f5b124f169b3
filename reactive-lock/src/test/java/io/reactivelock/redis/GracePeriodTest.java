package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockOptions;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import reactor.core.publisher.Sinks;

/**
 * How long a release keeps the lock for the oldest sleeper it wakes: the shorter of the longest
 * backoff step and the command timeout, whichever of the two is set longer. A longer grace period
 * holds every other waiter up that much longer when the sleeper died; a much shorter one lets
 * newcomers take the lock before the woken sleeper's claim arrives.
 */
@WithRedis
class GracePeriodTest {

    @ParameterizedTest(name = "longest backoff step {0} ms, command timeout {1} ms")
    @CsvSource({"5000, 10000", "10000, 5000"})
    void aReleaseKeepsTheLockForTheOldestSleeperForTheShorterOfTheLongestBackoffStepAndTheCommandTimeout(
            long maxBackoffMillis, long commandTimeoutMillis, RedisServer redis) throws Exception {
        Duration grace = Duration.ofMillis(Math.min(maxBackoffMillis, commandTimeoutMillis));
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                .backoff(Duration.ofMillis(1), Duration.ofMillis(maxBackoffMillis))
                .commandTimeout(Duration.ofMillis(commandTimeoutMillis)).build())) {
            Sinks.Empty<Void> body = Sinks.empty();
            CompletableFuture<Void> holder = lock.withLock("a", Duration.ofMinutes(1), body.asMono()).toFuture();
            await().until(() -> "1".equals(redis.call("EXISTS", "lock:{a}")));
            // A sleeper of another process that started first, and the mark its registration leaves on the lock.
            redis.call("ZADD", "lock:{a}:sleepers", "1", "sleeper");
            redis.call("SET", "lock:{a}", redis.call("GET", "lock:{a}") + "+", "KEEPTTL");

            body.tryEmitEmpty();
            holder.get(10, TimeUnit.SECONDS);
            long keptForMillis = Long.parseLong(redis.call("PTTL", "lock:{a}"));
            assertThat(redis.call("GET", "lock:{a}")).as("the lock, kept for the sleeper").isEqualTo("~sleeper");
            // Lower bound: 1 s of slack for the time from the release to this read on a loaded machine.
            assertThat(keptForMillis).as("ms the lock is kept for the sleeper, read right after the release")
                    .isLessThanOrEqualTo(grace.toMillis())
                    .isGreaterThan(grace.minusSeconds(1).toMillis());
        }
    }
}
