package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockClosedException;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.TcpProxy;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * Closing a client while its bodies hold locks, or while acquisitions are on their way: the bodies
 * are cancelled and every lock is released by token before the connections close, so nothing waits
 * for a lease of 5 minutes to run out.
 */
@WithRedis
class CloseReleasesTest {

    /** Far longer than any wait here: only a release removes the key in time. */
    private static final Duration LEASE = Duration.ofMinutes(5);
    /**
     * The bound from close to key gone: the close timeout, which close() waits at most for the
     * releases before the connections close. (On a quiet machine the key goes within milliseconds.)
     */
    private static final Duration WITHIN = LockOptions.DEFAULT_CLOSE_TIMEOUT;
    private static final Duration WAIT = Duration.ofSeconds(10);

    private RedisServer redis;

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
        redis.call("FLUSHALL");
    }

    private String pttl(String key) {
        return redis.call("PTTL", key);
    }

    @Test
    void closingCancelsTheRunningBodiesOfEveryPrimitiveAndReleasesTheirLocksBeforeTheConnectionsClose() {
        ReactiveRedisLock client = ReactiveRedisLock.create(redis.uri());
        AtomicInteger cancelled = new AtomicInteger();
        Mono<Object> forever = Mono.never().doOnCancel(cancelled::incrementAndGet);
        StepVerifier lock = StepVerifier.create(client.withLock("report", LEASE, lease -> forever))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockLostException.class)
                        .hasMessageContaining("the client was closed while the body held it"))
                .verifyLater();
        StepVerifier permit = StepVerifier.create(client.semaphore(2).withPermits("exports", 1, LEASE, lease -> forever))
                .expectError(LockLostException.class)
                .verifyLater();
        StepVerifier many = StepVerifier.create(client.withLockMany("feed", LEASE, lease -> forever.flux()))
                .expectError(LockLostException.class)
                .verifyLater();
        await().atMost(WAIT).until(() -> client.activeLeases() == 3);
        assertThat(Long.parseLong(pttl("lock:{report}"))).as("the lease, before close").isPositive();

        Duration gone = closeAndTimeUntilGone(client, "lock:{report}");

        assertThat(gone).as("from close to the key gone").isLessThan(WITHIN);
        assertThat(pttl("lock:{report}")).as("PTTL of the lock once close() returned: gone").isEqualTo("-2");
        assertThat(redis.call("EXISTS", "lock:{exports}:permits")).as("the semaphore's holders once close() returned").isEqualTo("0");
        assertThat(pttl("lock:{feed}")).as("PTTL of withLockMany's lock once close() returned").isEqualTo("-2");
        lock.verify(WAIT);
        permit.verify(WAIT);
        many.verify(WAIT);
        assertThat(cancelled).as("bodies cancelled").hasValue(3);
    }

    @Test
    void aGrantWhoseReplyIsOnItsWayWhenTheClientClosesIsReleasedBeforeTheConnectionsClose() {
        try (TcpProxy proxy = TcpProxy.to(redis)) {
            ReactiveRedisLock client = ReactiveRedisLock.create(proxy.uri());
            proxy.latency(Duration.ofMillis(100));
            StepVerifier acquisition = StepVerifier.create(client.withLock("report", LEASE, Mono.just("ran")))
                    .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockClosedException.class)
                            .hasMessageContaining("the lock instance was closed"))
                    .verifyLater();
            // Redis granted it; the reply spends 100 ms on its way back.
            await().atMost(WAIT).pollInterval(Duration.ofMillis(5)).until(() -> Long.parseLong(pttl("lock:{report}")) > 0);

            Duration gone = closeAndTimeUntilGone(client, "lock:{report}");

            assertThat(gone).as("from close to the key gone, through a proxy adding 200 ms to each round trip").isLessThan(WITHIN);
            assertThat(pttl("lock:{report}")).as("PTTL of the granted lock once close() returned: gone").isEqualTo("-2");
            acquisition.verify(WAIT);
        }
    }

    @Test
    void closeWaitsAtMostTheCloseTimeoutForReleasesRedisDoesNotAnswer() {
        Duration closeTimeout = Duration.ofMillis(300);
        ReactiveRedisLock client = ReactiveRedisLock.create(redis.uri(), LockOptions.builder().closeTimeout(closeTimeout).build());
        StepVerifier body = StepVerifier.create(client.withLock("report", LEASE, lease -> Mono.never()))
                .expectError(LockLostException.class)
                .verifyLater();
        await().atMost(WAIT).until(() -> client.activeLeases() == 1);
        redis.pause();
        try {
            long start = System.nanoTime();
            client.close();
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            // The slack covers the shutdown of the client's event loops after the wait.
            assertThat(took).as("close() against a frozen server, close timeout 300 ms").isLessThan(closeTimeout.plusSeconds(3));
        } finally {
            redis.resume();
        }
        body.verify(WAIT);
    }

    /**
     * A waiter that left keeps its channel subscribed for a linger time; when the client closes
     * first, that linger's end finds the client's resources shut down, where Lettuce throws instead
     * of failing the unsubscribe. Nothing may reach Reactor's handler of errors thrown by scheduled
     * tasks (it logs them at ERROR: "Scheduler worker ... failed with an uncaught exception"), as
     * happened to the examples' test JVM after each closed client (issue 36).
     */
    @Test
    void aChannelLingerThatEndsAfterTheClientClosedThrowsNothingAtTheScheduler() {
        List<Throwable> thrown = new CopyOnWriteArrayList<>();
        Schedulers.onHandleError("close-linger", (thread, error) -> thrown.add(error));
        VirtualTimeScheduler time = VirtualTimeScheduler.create();
        try {
            Duration linger = Duration.ofSeconds(1); // the longest backoff step
            ReactiveRedisLock client = ReactiveRedisLock.create(redis.uri(),
                    LockOptions.builder().scheduler(time).backoff(Duration.ofMillis(10), linger).build());
            redis.call("SET", "lock:{report}", "another-holder", "PX", "60000");
            Disposable waiter = client.withLock("report", LEASE, Mono.just(1)).subscribe(value -> {}, error -> {});
            await().atMost(WAIT).until(() -> !redis.call("PUBSUB", "CHANNELS", "*").isEmpty());

            waiter.dispose(); // the channel lingers, on the virtual clock
            client.close();
            time.advanceTimeBy(linger);

            assertThat(thrown).as("errors thrown by scheduled tasks after the close").isEmpty();
        } finally {
            time.dispose();
            Schedulers.resetOnHandleError("close-linger");
        }
    }

    /**
     * Closes {@code client} and returns how long after the close began {@code key} was seen gone
     * (PTTL -2, polled every 5 ms from another connection), failing if not within 10 s; returns
     * once the close completed.
     */
    private Duration closeAndTimeUntilGone(ReactiveRedisLock client, String key) {
        long start = System.nanoTime();
        CompletableFuture<Void> closed = client.closeAsync().toFuture();
        await().atMost(WAIT).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(5)).until(() -> pttl(key).equals("-2"));
        Duration gone = Duration.ofNanos(System.nanoTime() - start);
        await().atMost(WAIT).until(closed::isDone);
        return gone;
    }
}
