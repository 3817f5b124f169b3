package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockOptions;
import io.reactivelock.support.RecordingListener;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * What a non-fair holder's release gives the longest waiter of its own process: the lock, with a
 * fencing token above its own, only if the holder still held it. Each waiter here has a 10-minute
 * backoff step, so only a hand-off, a wake-up or a release notice brings it to the lock.
 */
@WithRedis
class LocalHandOffTest {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(20);

    private final RedisServer redis;
    private final RecordingListener heard = new RecordingListener();
    private final ReactiveRedisLock lock;
    private final Disposable.Composite subscriptions = Disposables.composite();

    LocalHandOffTest(RedisServer redis) {
        this.redis = redis;
        this.lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                .backoff(Duration.ofMinutes(10), Duration.ofMinutes(10)).acquireTimeout(Duration.ofMinutes(2))
                .listener(heard).build());
    }

    @AfterEach
    void close() {
        subscriptions.dispose();
        lock.close();
    }

    /** Holds lock "a" with a body that records its fencing token (0 until it runs) and ends when {@code done} completes. */
    private AtomicLong hold(Sinks.Empty<Void> done) {
        AtomicLong fence = new AtomicLong();
        subscriptions.add(lock.withLock("a", TTL, lease -> Mono.fromRunnable(() -> fence.set(lease.fencingToken()))
                .then(done.asMono())).subscribe());
        return fence;
    }

    @Test
    void aHolderHandsItsLockToItsLocalWaiterWithAHigherFencingTokenAndHearsAHandOff() {
        Sinks.Empty<Void> holderDone = Sinks.empty();
        AtomicLong holderFence = hold(holderDone);
        await().until(() -> holderFence.get() != 0);
        AtomicLong waiterFence = hold(Sinks.empty());
        await().until(() -> lock.localWaiters("a") == 1);

        holderDone.tryEmitEmpty();
        await("the waiter's body").atMost(WAIT).until(() -> waiterFence.get() != 0);
        assertThat(waiterFence.get()).as("the waiter's fencing token").isGreaterThan(holderFence.get());
        // The holder hears its hand-off once the script's reply is in, which may be after the waiter entered.
        await("the holder to hear its hand-off").atMost(WAIT).until(() -> heard.list.contains("handedOff a"));
        assertThat(heard.list).as("what the listener heard")
                .containsExactlyInAnyOrder("acquired a", "released a", "handedOff a", "acquired a");
    }

    @Test
    void aHolderWhoseLockWasTakenOverHandsNothingToItsLocalWaiterWhichEntersOnlyOnceTheLockIsFree() {
        Sinks.Empty<Void> holderDone = Sinks.empty();
        AtomicLong holderFence = hold(holderDone);
        await().until(() -> holderFence.get() != 0);
        AtomicLong waiterFence = hold(Sinks.empty());
        await().until(() -> lock.localWaiters("a") == 1);

        redis.call("SET", "lock:{a}", "outsider", "PX", "60000"); // the holder's lease lost to another holder
        holderDone.tryEmitEmpty(); // its release tries to hand the lock over: nothing is the holder's to hand
        await("the waiter, woken, found the lock busy and marked it").atMost(WAIT)
                .until(() -> "outsider+".equals(redis.call("GET", "lock:{a}")));
        assertThat(waiterFence.get()).as("the waiter's body, while the outsider holds the lock").isZero();
        assertThat(heard.list).as("what the listener heard: no hand-off").containsExactly("acquired a", "released a");

        redis.call("EVAL", LockScripts.RELEASE.source(), "2", "lock:{a}", "lock:{a}:sleepers", "outsider",
                "lock:{a}:released", "60000");
        await("the waiter's body").atMost(WAIT).until(() -> waiterFence.get() != 0);
        assertThat(waiterFence.get()).as("the waiter's fencing token, claimed from Redis").isGreaterThan(holderFence.get());
    }
}
