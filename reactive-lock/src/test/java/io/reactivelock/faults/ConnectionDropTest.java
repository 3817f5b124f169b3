package io.reactivelock.faults;

import static io.reactivelock.faults.Faults.exists;
import static io.reactivelock.faults.Faults.millisSince;
import static io.reactivelock.faults.Faults.report;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.TcpProxy;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * Faults 4 and 5: the connection to Redis dies in the middle of an acquire or a release, through
 * a {@link TcpProxy}. The lock's TTL is a minute, so a key that is gone within seconds was
 * released, not expired: the outcome is always resolved, never a lock held by nobody.
 */
@WithRedis
class ConnectionDropTest {

    private static final Duration LONG_TTL = Duration.ofMinutes(1);

    private RedisServer redis;
    private TcpProxy proxy;

    /** Loads the scripts, so that no NOSCRIPT round trip is in play when a fault strikes. */
    private static ReactiveRedisLock warm(ReactiveRedisLock lock) {
        // A body that sees the lease, so that the acquire script is loaded too: no NOSCRIPT reply is dropped later.
        lock.withLock("warm-up", LONG_TTL, lease -> Mono.just(1)).block(Duration.ofSeconds(10));
        return lock;
    }

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
        proxy = TcpProxy.to(redis);
    }

    @AfterEach
    void tearDown() {
        proxy.close();
    }

    @Test
    void anAcquireWhoseReplyIsLostIsRetriedWithTheSameTokenAndTheBodyRunsOnce() throws Exception {
        ReactiveRedisLock lock = warm(ReactiveRedisLock.create(proxy.uri(), LockOptions.builder()
                .commandTimeout(Duration.ofSeconds(1)).build()));
        try {
            AtomicInteger bodies = new AtomicInteger();
            AtomicLong fence = new AtomicLong();
            proxy.dropReplies(true);
            CompletableFuture<String> result = lock.withLock("a", LONG_TTL, lease -> {
                bodies.incrementAndGet();
                fence.set(lease.fencingToken());
                return Mono.just("done");
            }).toFuture();
            // Redis granted the lock, but the grant never reaches the client; then the connection breaks.
            await().pollInterval(Duration.ofMillis(2)).until(() -> exists(redis, "lock:{a}"));
            String fenceIssued = redis.call("GET", "lock:{a}:fence");
            proxy.dropReplies(false);
            long cutAt = System.nanoTime();
            proxy.cutConnections();

            assertThat(result.get(10, TimeUnit.SECONDS)).isEqualTo("done");
            long toResult = millisSince(cutAt);
            assertThat(bodies).hasValue(1);
            assertThat(fence.get()).as("the retry was granted the same lock again").hasToString(fenceIssued);
            await().pollInterval(Duration.ofMillis(5)).atMost(Duration.ofSeconds(5)).until(() -> !exists(redis, "lock:{a}"));
            report("fault 4 retried", "reply dropped + connection cut -> body ran once with the fencing token of the"
                    + " lost grant, " + toResult + " ms after the cut; orphan locks: 0");
        } finally {
            lock.close();
        }
    }

    @Test
    void aPlainSetWhoseReplyIsLostIsFollowedByTheScriptWithTheSameTokenAndTheBodyRunsOnce() throws Exception {
        ReactiveRedisLock lock = warm(ReactiveRedisLock.create(proxy.uri(), LockOptions.builder()
                .commandTimeout(Duration.ofSeconds(1)).build()));
        try {
            AtomicInteger bodies = new AtomicInteger();
            proxy.dropReplies(true);
            // A body that does not see the lease: the first attempt is SET NX PX, not the script.
            CompletableFuture<String> result = lock.withLock("a", LONG_TTL, Mono.fromCallable(() -> {
                bodies.incrementAndGet();
                return "done";
            })).toFuture();
            // Redis set the key, but the reply never reaches the client; then the connection breaks. The
            // lease is a minute: only a retry that knows the key as its own gets the result within 10 s.
            await().pollInterval(Duration.ofMillis(2)).until(() -> exists(redis, "lock:{a}"));
            proxy.dropReplies(false);
            proxy.cutConnections();

            assertThat(result.get(10, TimeUnit.SECONDS)).isEqualTo("done");
            assertThat(bodies).hasValue(1);
            await().pollInterval(Duration.ofMillis(5)).atMost(Duration.ofSeconds(5)).until(() -> !exists(redis, "lock:{a}"));
        } finally {
            lock.close();
        }
    }

    @Test
    void anAcquireWhoseReplyIsLostAndWhoseCallerGivesUpIsReleased() throws Exception {
        ReactiveRedisLock lock = warm(ReactiveRedisLock.create(proxy.uri(), LockOptions.builder()
                .acquireTimeout(Duration.ofMillis(300)).build()));
        try {
            proxy.dropReplies(true);
            CompletableFuture<String> result = lock.withLock("a", LONG_TTL, Mono.just("never")).toFuture();
            await().pollInterval(Duration.ofMillis(2)).until(() -> exists(redis, "lock:{a}"));

            Throwable error = RedisRestartTest.failure(result);
            assertThat(error).isInstanceOf(LockAcquisitionException.class);
            long gaveUpAt = System.nanoTime();
            proxy.cutConnections();
            proxy.dropReplies(false);

            await().pollInterval(Duration.ofMillis(5)).atMost(Duration.ofSeconds(5)).until(() -> !exists(redis, "lock:{a}"));
            report("fault 4 abandoned", "caller gave up (LockAcquisitionException), lock gone " + millisSince(gaveUpAt)
                    + " ms later; orphan locks: 0");
            assertThat(lock.withLock("a", LONG_TTL, Mono.just("after")).block(Duration.ofSeconds(10))).isEqualTo("after");
        } finally {
            lock.close();
        }
    }

    @Test
    void aReleaseLostWithTheConnectionIsRetriedAndTheLockIsFreedLongBeforeItsTtl() throws Exception {
        ReactiveRedisLock lock = warm(ReactiveRedisLock.create(proxy.uri(), LockOptions.builder()
                .commandTimeout(Duration.ofSeconds(1)).build()));
        try {
            AtomicLong sentBeforeRelease = new AtomicLong();
            CompletableFuture<String> result = lock.withLock("a", LONG_TTL, Mono.fromCallable(() -> {
                // The network stops delivering just as the body ends: the release is held in the proxy.
                sentBeforeRelease.set(proxy.requestBytes());
                proxy.freeze();
                return "done";
            })).toFuture();
            await().pollInterval(Duration.ofMillis(2)).until(() -> proxy.requestBytes() > sentBeforeRelease.get()
                    && sentBeforeRelease.get() > 0);
            assertThat(exists(redis, "lock:{a}")).as("the release has not arrived").isTrue();
            long cutAt = System.nanoTime();
            proxy.cutConnections();
            proxy.unfreeze();

            assertThat(result.get(10, TimeUnit.SECONDS)).isEqualTo("done");
            await().pollInterval(Duration.ofMillis(5)).atMost(Duration.ofSeconds(5)).until(() -> !exists(redis, "lock:{a}"));
            report("fault 5 request lost", "release lost with the connection -> retried, value emitted and lock gone "
                    + millisSince(cutAt) + " ms after the cut");
        } finally {
            lock.close();
        }
    }

    @Test
    void aReleaseWhoseReplyIsLostIsRetriedHarmlesslyAndTheValueIsEmitted() throws Exception {
        ReactiveRedisLock lock = warm(ReactiveRedisLock.create(proxy.uri(), LockOptions.builder()
                .commandTimeout(Duration.ofSeconds(1)).build()));
        try {
            CompletableFuture<String> result = lock.withLock("a", LONG_TTL, Mono.fromCallable(() -> {
                proxy.dropReplies(true);
                return "done";
            })).toFuture();
            // Redis ran the release; its reply is lost, then the connection breaks.
            await().pollInterval(Duration.ofMillis(2)).until(() -> !exists(redis, "lock:{a}"));
            long cutAt = System.nanoTime();
            proxy.dropReplies(false);
            proxy.cutConnections();

            assertThat(result.get(10, TimeUnit.SECONDS)).isEqualTo("done");
            report("fault 5 reply lost", "release ran, reply lost -> value emitted " + millisSince(cutAt)
                    + " ms after the cut, no error");
            assertThat(lock.withLock("a", LONG_TTL, Mono.just("after")).block(Duration.ofSeconds(10))).isEqualTo("after");
        } finally {
            lock.close();
        }
    }
}
