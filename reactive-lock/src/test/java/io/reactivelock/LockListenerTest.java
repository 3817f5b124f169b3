package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

/** What a {@link LockListener} hears, in which order, and that a failing one does no harm. */
@WithRedis
class LockListenerTest {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(10);

    private final Recorder events = new Recorder();
    private RedisServer redis;
    private ReactiveRedisLock lock;

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
        lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder().acquireTimeout(Duration.ZERO).listener(events).build());
    }

    @AfterEach
    void tearDown() {
        lock.close();
    }

    @Test
    void aBodyThatCompletesIsHeardAsAcquiredThenReleased() {
        StepVerifier.create(lock.withLock("a", TTL, Mono.just(1))).expectNext(1).verifyComplete();
        assertThat(events.list).containsExactly("acquired a", "released a");
    }

    @Test
    void aBusyLockIsHeardAsAnAcquireFailureWithoutCause() {
        Sinks.Empty<Void> finish = Sinks.empty();
        Disposable holder = lock.withLock("a", TTL, finish.asMono()).subscribe();
        await().pollInterval(Duration.ofMillis(5)).until(() -> events.list.contains("acquired a"));

        StepVerifier.create(lock.withLock("a", TTL, Mono.just(1))).verifyError(LockAcquisitionException.class);
        assertThat(events.failures).singleElement()
                .satisfies(e -> assertThat(e).isInstanceOf(LockAcquisitionException.class).hasNoCause());

        finish.tryEmitEmpty();
        await().pollInterval(Duration.ofMillis(5)).until(() -> events.list.contains("released a"));
        holder.dispose();
    }

    @Test
    void rejectedArgumentsAreHeardBeforeTheyAreThrown() {
        assertThatThrownBy(() -> lock.withLock("", TTL, Mono.just(1))).isInstanceOf(IllegalArgumentException.class);
        assertThat(events.list).containsExactly("acquireFailed ");
        assertThat(events.failures).singleElement().isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void renewalsAreHeardWhileTheBodyRuns() {
        Sinks.Empty<Void> finish = Sinks.empty();
        lock.withLock("a", Duration.ofMillis(300), finish.asMono()).subscribe();
        await().pollInterval(Duration.ofMillis(10)).atMost(WAIT)
                .until(() -> events.list.stream().filter("renewed a"::equals).count() >= 2);
        finish.tryEmitEmpty();
        await().pollInterval(Duration.ofMillis(5)).until(() -> events.list.contains("released a"));
    }

    @Test
    void aLostLeaseIsHeardBeforeTheRelease() {
        Sinks.Empty<Void> never = Sinks.empty();
        Mono<Void> locked = lock.withLock("a", Duration.ofMillis(300), never.asMono());
        StepVerifier.create(locked)
                .then(() -> {
                    await().pollInterval(Duration.ofMillis(5)).until(() -> events.list.contains("acquired a"));
                    redis.call("DEL", "lock:{a}"); // another party breaks the lock
                })
                .expectError(LockLostException.class)
                .verify(WAIT);
        assertThat(events.list).filteredOn(e -> !e.startsWith("renewed"))
                .containsExactly("acquired a", "lost a", "released a");
    }

    @Test
    void cancellingAHeldLockIsHeardAsReleased() {
        Sinks.Empty<Void> never = Sinks.empty();
        StepVerifier.create(lock.withLock("a", TTL, never.asMono()))
                .then(() -> await().pollInterval(Duration.ofMillis(5)).until(() -> events.list.contains("acquired a")))
                .thenCancel()
                .verify(WAIT);
        assertThat(events.list).containsExactly("acquired a", "released a");
    }

    @Test
    void aListenerThatThrowsDoesNotChangeWhatTheCallerSees(RedisServer redis) {
        LockListener throwing = new LockListener() {
            @Override
            public void acquired(String name, Duration waited) {
                throw new IllegalStateException("listener bug");
            }

            @Override
            public void released(String name, Duration held) {
                throw new IllegalStateException("listener bug");
            }
        };
        try (ReactiveRedisLock other = ReactiveRedisLock.create(redis.uri(), LockOptions.builder().listener(throwing).build())) {
            StepVerifier.create(other.withLock("a", TTL, Mono.just(1))).expectNext(1).verifyComplete();
            assertThat(redis.call("EXISTS", "lock:{a}")).as("released").isEqualTo("0");
        }
    }

    /** Records the events as short strings, and the failures. */
    private static final class Recorder implements LockListener {
        final List<String> list = new CopyOnWriteArrayList<>();
        final List<Throwable> failures = new CopyOnWriteArrayList<>();

        @Override
        public void acquired(String name, Duration waited) {
            list.add("acquired " + name);
        }

        @Override
        public void acquireFailed(String name, Throwable error, Duration waited) {
            list.add("acquireFailed " + name);
            failures.add(error);
        }

        @Override
        public void renewed(String name) {
            list.add("renewed " + name);
        }

        @Override
        public void lost(String name, LockException error) {
            list.add("lost " + name);
        }

        @Override
        public void released(String name, Duration held) {
            list.add("released " + name);
        }
    }
}
