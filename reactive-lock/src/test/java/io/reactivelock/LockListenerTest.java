package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.support.RecordingListener;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;
import io.reactivelock.redis.ReactiveRedisLock;

/**
 * What a {@link LockListener} hears from {@link ReactiveRedisLock} alone: a closed lock, a refused
 * acquisition and a failing Redis. What every lock makes it hear is in {@code io.reactivelock.testing.ReactiveLockContract} (module reactive-lock-test).
 */
@WithRedis
class LockListenerTest {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(10);

    private final RecordingListener events = new RecordingListener();

    @Test
    void aLockRequestedAfterCloseIsHeardAsAnAcquireFailure(RedisServer redis) {
        ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder().listener(events).build());
        lock.close();
        StepVerifier.create(lock.withLock("a", TTL, Mono.just(1))).verifyError(LockClosedException.class);
        assertThat(events.list).containsExactly("acquireFailed a");
        assertThat(events.failures).singleElement().isInstanceOf(LockClosedException.class);
    }

    @Test
    void anUnansweredAttemptIsHeardAsAnAcquireFailureCausedByTheTimeout(RedisServer redis) {
        LockOptions options = LockOptions.builder()
                .acquireTimeout(Duration.ZERO)
                .commandTimeout(Duration.ofMillis(200))
                .listener(events)
                .build();
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), options)) {
            redis.pause();
            try {
                StepVerifier.create(lock.withLock("a", TTL, Mono.just(1)))
                        .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockAcquisitionException.class)
                                .hasCauseInstanceOf(TimeoutException.class))
                        .verify(WAIT);
            } finally {
                redis.resume();
            }
        }
        assertThat(events.list).containsExactly("acquireFailed a");
        assertThat(events.failures).singleElement().satisfies(e -> assertThat(e)
                .isInstanceOf(LockAcquisitionException.class).hasCauseInstanceOf(TimeoutException.class));
    }

    @Test
    void anAcquisitionRefusedForTooManyPendingIsHeardAsAnAcquireFailure(RedisServer redis) {
        LockOptions options = LockOptions.builder().maxPendingAcquisitions(1).listener(events).build();
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), options)) {
            redis.call("SET", "lock:{a}", "someone-else", "PX", "60000");
            Sinks.Empty<Void> stop = Sinks.empty();
            Mono<Object> waiting = lock.withLock("a", TTL, Mono.empty()).takeUntilOther(stop.asMono()).cache();
            waiting.subscribe();
            StepVerifier.create(lock.withLock("b", TTL, Mono.just(1))).verifyError(TooManyPendingAcquisitionsException.class);
            stop.tryEmitEmpty();
            waiting.block(WAIT);
        }
        assertThat(events.list).containsExactly("acquireFailed b");
        assertThat(events.failures).singleElement().isInstanceOf(TooManyPendingAcquisitionsException.class);
    }
}
