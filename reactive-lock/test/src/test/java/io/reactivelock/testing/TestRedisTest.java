package io.reactivelock.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisURI;
import io.reactivelock.LockLease;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.NeedsRedis;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * {@link TestRedis} as a user's test meets it: one line gives a real Redis that a lock runs on, and
 * closing it stops the server. On CI a Docker engine answers, so it is a container there; on a
 * machine with only a {@code redis-server} on the PATH, a process; with neither, skipped. It runs a
 * real server, so the fast tier ({@code -Dredis.server=none}) skips it, as every test that needs one.
 */
@NeedsRedis
class TestRedisTest {

    private static final Duration TTL = Duration.ofSeconds(30);

    @Test
    void oneLineGivesARealRedisThatALockRunsOnAndCloseStopsIt() {
        RedisURI uri;
        try (TestRedis redis = TestRedis.start()) {
            System.err.println("[test-redis] " + redis);
            uri = redis.uri();
            assertThat(uri.getHost()).as("listens on this machine").isIn("127.0.0.1", "localhost");
            try (ReactiveRedisLock locks = ReactiveRedisLock.create(uri)) {
                LockLease first = locks.withLock("order:1", TTL, lease -> Mono.just(lease)).block(TTL);
                LockLease second = locks.withLock("order:1", TTL, lease -> Mono.just(lease)).block(TTL);
                assertThat(second.fencingToken()).as("a real store: fencing tokens rise").isGreaterThan(first.fencingToken());
            }
        }
        RedisURI stopped = uri;
        assertThatThrownBy(() -> {
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress(stopped.getHost(), stopped.getPort()), 1000);
            }
        }).as("nothing listens once closed").isInstanceOf(IOException.class);
    }
}
