package io.reactivelock.faults;

import static io.reactivelock.faults.Faults.exists;
import static io.reactivelock.faults.Faults.report;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.TcpProxy;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * Fault 6: Lettuce's reconnect replay. During an outage a caller gives up on its lock; when the
 * connection comes back, no lock of that caller may appear and stay. The lock made from a URI
 * rejects commands while disconnected, so nothing is queued for replay; a caller's client with
 * Lettuce's default (commands buffered while disconnected, replayed on reconnect) does replay the
 * acquire after its caller gave up, and the lock releases the grant it did not wait for.
 */
@WithRedis
class ReconnectReplayTest {

    private static final Duration LONG_TTL = Duration.ofMinutes(1);

    private RedisServer redis;
    private TcpProxy proxy;

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
    void withTheUriFactoryNothingIsReplayedAfterTheCallerGaveUp() {
        ReactiveRedisLock lock = ReactiveRedisLock.create(proxy.uri(), LockOptions.builder()
                .acquireTimeout(Duration.ofMillis(300)).build());
        try {
            giveUpDuringAnOutageThenReconnect(lock);

            assertThat(exists(redis, "lock:{a}:fence")).as("the acquire never reached Redis").isFalse();
            assertThat(exists(redis, "lock:{a}")).isFalse();
            report("fault 6 URI factory", "REJECT_COMMANDS: acquire never replayed; orphan locks: 0");
        } finally {
            lock.close();
        }
    }

    @Test
    void withACallersClientThatBuffersCommandsTheReplayedGrantIsReleased() {
        RedisClient client = RedisClient.create(proxy.uri());
        client.setOptions(ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.ACCEPT_COMMANDS).build());
        ReactiveRedisLock lock = ReactiveRedisLock.create(client, LockOptions.builder()
                .acquireTimeout(Duration.ofMillis(300)).commandTimeout(Duration.ofMillis(100)).build());
        try {
            giveUpDuringAnOutageThenReconnect(lock);

            await().pollInterval(Duration.ofMillis(5)).until(() -> exists(redis, "lock:{a}:fence"));
            await().pollInterval(Duration.ofMillis(5)).atMost(Duration.ofSeconds(5)).until(() -> !exists(redis, "lock:{a}"));
            report("fault 6 buffering client", "ACCEPT_COMMANDS: acquire replayed after the caller gave up (fence"
                    + " issued), grant released; orphan locks: 0");
        } finally {
            lock.close();
            client.shutdown();
        }
    }

    private void giveUpDuringAnOutageThenReconnect(ReactiveRedisLock lock) {
        assertThat(lock.withLock("warm-up", LONG_TTL, Mono.just(1)).block(Duration.ofSeconds(10))).isEqualTo(1);
        proxy.refuseConnections(true);
        proxy.cutConnections();

        Throwable error = Mono.from(lock.withLock("a", LONG_TTL, Mono.just("x")))
                .<Throwable>map(value -> new AssertionError("expected a failure, got " + value))
                    .onErrorResume(Mono::just).block(Duration.ofSeconds(10));
        assertThat(error).isInstanceOf(LockAcquisitionException.class);

        proxy.refuseConnections(false);
        // Once another lock goes through, the connection is back and any replay has been sent before it.
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20)).ignoreExceptions().until(() ->
                "probe".equals(lock.withLock("probe", LONG_TTL, Mono.just("probe")).block(Duration.ofSeconds(5))));
    }
}
