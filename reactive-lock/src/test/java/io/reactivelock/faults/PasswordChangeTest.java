package io.reactivelock.faults;

import static io.reactivelock.faults.Faults.report;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisURI;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * Fault 11: the lock user's password changes under a running instance and its connections drop.
 * Lettuce's reconnects then fail with {@code WRONGPASS}; acquisitions see only a client that is
 * not connected, and retry once per backoff step until the acquire timeout, neither hanging nor
 * spinning.
 */
@WithRedis
class PasswordChangeTest {

    private static final Duration ACQUIRE_TIMEOUT = Duration.ofSeconds(2);
    private static final Duration STEP = Duration.ofMillis(100);

    @Test
    void afterAPasswordChangeAcquisitionsRetryOncePerBackoffStepUntilTheAcquireTimeout(RedisServer redis) {
        redis.call("ACL", "SETUSER", "lock-user", "on", ">old-password", "~*", "&*", "+@all");
        RedisURI uri = RedisURI.builder().withHost(redis.host()).withPort(redis.port())
                .withAuthentication("lock-user", "old-password".toCharArray()).build();
        // A fixed step without jitter, so that the number of attempts is known.
        ReactiveRedisLock lock = ReactiveRedisLock.create(uri, LockOptions.builder()
                .backoff(STEP, STEP).jitter(0).acquireTimeout(ACQUIRE_TIMEOUT).build());
        try {
            assertThat(lock.withLock("a", Duration.ofSeconds(30), Mono.just("before")).block(Duration.ofSeconds(10))).isEqualTo("before");

            redis.call("ACL", "SETUSER", "lock-user", "resetpass", ">new-password");
            redis.call("CLIENT", "KILL", "USER", "lock-user");
            await().until(() -> !redis.call("CLIENT", "LIST").contains("user=lock-user"));
            Throwable error = Mono.from(lock.withLock("a", Duration.ofSeconds(30), Mono.just("after")))
                    .<Throwable>map(value -> new AssertionError("expected a failure, got " + value))
                    .onErrorResume(Mono::just).block(Duration.ofSeconds(10));

            assertThat(error).isInstanceOf(LockAcquisitionException.class).hasMessageContaining("'a'")
                    .rootCause().hasMessageContaining("not connected");
            LockAcquisitionException failure = (LockAcquisitionException) error;
            long steps = ACQUIRE_TIMEOUT.dividedBy(STEP);
            // One attempt at once and one after each whole step; late timers may cost the last few.
            assertThat(failure.attempts()).as("attempts in %s with a %s step", ACQUIRE_TIMEOUT, STEP)
                    .isBetween((int) (steps * 3 / 4), (int) steps + 1);
            assertThat(failure.waited()).isGreaterThanOrEqualTo(ACQUIRE_TIMEOUT);
            report("fault 11 password changed", failure.attempts() + " attempts in " + failure.waited().toMillis()
                    + " ms (step " + STEP.toMillis() + " ms); cause " + error.getCause());
        } finally {
            lock.close();
        }
    }
}
