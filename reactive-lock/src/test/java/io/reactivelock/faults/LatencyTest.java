package io.reactivelock.faults;

import static io.reactivelock.faults.Faults.report;
import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.reactive.RedisReactiveCommands;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.LockListener;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.CriticalSectionHistory;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.TcpProxy;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;

/**
 * Fault 10: 50 ms of latency each way (a 100 ms round trip) between the lock and Redis. Exclusion
 * and renewal still hold when the renewal interval leaves a round trip of slack before the lease
 * ends; when it does not, the holder is told with {@link LockLostException} instead of running on
 * unprotected.
 */
@WithRedis
class LatencyTest {

    private static final Duration ONE_WAY = Duration.ofMillis(50);

    private RedisServer redis;
    private TcpProxy proxy;

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
        proxy = TcpProxy.to(redis);
        proxy.latency(ONE_WAY);
    }

    @AfterEach
    void tearDown() {
        proxy.close();
    }

    /** Runs acquire, one renewal and release once, so that Redis has every script of the lock cached. */
    private void warmUp() {
        Sinks.Empty<Void> renewed = Sinks.empty();
        ReactiveRedisLock warm = ReactiveRedisLock.create(proxy.uri(), LockOptions.builder()
                .renewalInterval(Duration.ofMillis(100))
                .listener(new LockListener() {
                    @Override
                    public void renewed(String name) {
                        renewed.tryEmitEmpty();
                    }
                })
                .build());
        try {
            warm.withLock("warm-up", Duration.ofSeconds(10), renewed.asMono()).block(Duration.ofSeconds(10));
        } finally {
            warm.close();
        }
    }

    @Test
    void underA100msRoundTripHoldersStillExcludeEachOtherAndRenewInTime() {
        ReactiveRedisLock lock = ReactiveRedisLock.create(proxy.uri(), LockOptions.builder()
                .acquireTimeout(Duration.ofSeconds(30)).build());
        RedisClient client = RedisClient.create(proxy.uri());
        try (StatefulRedisConnection<String, String> connection = client.connect(StringCodec.UTF8)) {
            RedisReactiveCommands<String, String> commands = connection.reactive();
            // Load the scripts first: on a cold script cache the first use of each costs one more round trip (NOSCRIPT, then EVAL).
            warmUp();
            CriticalSectionHistory history = new CriticalSectionHistory();
            // TTL 1 s, renewal every 333 ms: each body (two round trips and a 1.2 s pause) outlives the TTL.
            long start = System.nanoTime();
            Flux.range(0, 4)
                    .flatMap(i -> lock.withLock("counter", Duration.ofSeconds(1), lease -> history.record("p" + i,
                            "counter", lease.token(), lease.fencingToken(), commands.get("counter").defaultIfEmpty("0")
                                    .publishOn(Schedulers.parallel())
                                    .delayElement(Duration.ofMillis(1200))
                                    .flatMap(value -> commands.set("counter", String.valueOf(Integer.parseInt(value) + 1))))))
                    .then()
                    .block(Duration.ofSeconds(60));

            assertThat(history.maxOccupancy()).isEqualTo(1);
            assertThat(history.fencingViolations()).isEmpty();
            assertThat(history.lostUpdates(Long.parseLong(redis.call("GET", "counter")))).isZero();
            report("fault 10 latency", "4 holders, TTL 1 s, RTT 100 ms, bodies of ~1.4 s: occupancy "
                    + history.maxOccupancy() + ", lost updates 0, no LockLostException, total "
                    + Faults.millisSince(start) + " ms");
        } finally {
            lock.close();
            client.shutdown();
        }
    }

    @Test
    void underTheSameLatencyTheWorkloadWithoutTheLockIsCaughtOverlapping() {
        RedisClient client = RedisClient.create(proxy.uri());
        try (StatefulRedisConnection<String, String> connection = client.connect(StringCodec.UTF8)) {
            RedisReactiveCommands<String, String> commands = connection.reactive();
            CriticalSectionHistory history = new CriticalSectionHistory();
            Flux.range(0, 4)
                    .flatMap(i -> history.record("p" + i, "counter", "none", 0, commands.get("counter").defaultIfEmpty("0")
                            .publishOn(Schedulers.parallel())
                            .delayElement(Duration.ofMillis(100))
                            .flatMap(value -> commands.set("counter", String.valueOf(Integer.parseInt(value) + 1)))))
                    .then()
                    .block(Duration.ofSeconds(60));

            assertThat(history.maxOccupancy()).as("negative control").isGreaterThan(1);
            assertThat(history.lostUpdates(Long.parseLong(redis.call("GET", "counter")))).isPositive();
        } finally {
            client.shutdown();
        }
    }

    @Test
    void aTtlThatLeavesNoRoomForTheRoundTripEndsTheBodyWithLockLostException() {
        proxy.latency(Duration.ZERO);
        warmUp();
        proxy.latency(ONE_WAY);
        // The grant arrives 100 ms after it was sent, with 50 ms of the 150 ms lease left, and the
        // first renewal (at 50 ms) cannot come back before the lease ends.
        ReactiveRedisLock lock = ReactiveRedisLock.create(proxy.uri(), LockOptions.builder()
                .renewalInterval(Duration.ofMillis(50)).build());
        try {
            Throwable error = Mono.from(lock.withLock("a", Duration.ofMillis(150), Mono.never()))
                    .<Throwable>map(value -> new AssertionError("expected a failure, got " + value))
                    .onErrorResume(Mono::just).block(Duration.ofSeconds(10));
            assertThat(error).isInstanceOf(LockLostException.class);
            report("fault 10 short TTL", "TTL 150 ms, renewal 50 ms, RTT 100 ms -> " + error.getMessage());
        } finally {
            lock.close();
        }
    }
}
