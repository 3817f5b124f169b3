package io.reactivelock.scale;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.CommandStats;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * What one uncontended acquire and release costs Redis, in calls by command ({@code INFO
 * commandstats}, which counts the commands scripts run too), against the raw floor: {@code SET NX
 * PX} and a compare-and-delete script ({@code EVALSHA}, {@code GET}, {@code DEL}). The expected
 * counts are exact, so a call added to the uncontended path fails here. Run on another server with
 * {@code -Dredis.server=/path/to/redis-server}.
 */
@WithRedis
class CallsPerPairTest {

    private static final int PAIRS = 200;
    private static final Duration TTL = Duration.ofSeconds(30);
    private static final String FLOOR_RELEASE = """
            if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
            return 0
            """;

    /**
     * Per uncontended pair of {@code withLock(name, ttl, Mono)}, the raw floor's calls. Acquire:
     * {@code SET NX PX} (the body cannot read a fencing token, so none is issued). Release: the
     * script, one GET of the lock (whose value says whether anyone sleeps on it), DEL.
     */
    static final Map<String, Long> OURS = Map.of("set", 1L, "evalsha", 1L, "get", 1L, "del", 1L);
    /**
     * Per uncontended pair of a body that sees the lease. Acquire: the script, its SET NX, then TIME
     * and SET ... GET for the fencing token. Release: as {@link #OURS}.
     */
    static final Map<String, Long> OURS_FENCED = Map.of("evalsha", 2L, "set", 2L, "time", 1L, "get", 1L, "del", 1L);
    static final Map<String, Long> FLOOR = Map.of("set", 1L, "evalsha", 1L, "get", 1L, "del", 1L);

    private final RedisServer redis;
    private ReactiveRedisLock lock;

    CallsPerPairTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void setUp() {
        lock = ReactiveRedisLock.create(redis.uri(), LockOptions.defaults());
    }

    @AfterEach
    void tearDown() {
        lock.close();
    }

    @Test
    void anUncontendedPairOnOneNameCostsTheCountedCalls() {
        lock.withLock("warm-up", TTL, Mono.just(0)).block(); // connections and scripts loaded before counting
        Map<String, Long> before = CommandStats.all(redis);
        for (int i = 0; i < PAIRS; i++) {
            assertThat(lock.withLock("order", TTL, Mono.just(i)).block()).isEqualTo(i);
        }
        Map<String, Long> perPair = perPair(before, CommandStats.all(redis));
        report("ours, one name", perPair);
        assertThat(perPair).isEqualTo(OURS);
    }

    @Test
    void anUncontendedPairOnAFreshNameCostsTheSame() {
        lock.withLock("warm-up", TTL, Mono.just(0)).block();
        Map<String, Long> before = CommandStats.all(redis);
        for (int i = 0; i < PAIRS; i++) {
            assertThat(lock.withLock("order:" + i, TTL, Mono.just(i)).block()).isEqualTo(i);
        }
        Map<String, Long> perPair = perPair(before, CommandStats.all(redis));
        report("ours, a fresh name each", perPair);
        assertThat(perPair).isEqualTo(OURS);
    }

    @Test
    void anUncontendedPairWithAFencingTokenCostsTheScriptsCalls() {
        lock.withLock("warm-up", TTL, lease -> Mono.just(0L)).block();
        Map<String, Long> before = CommandStats.all(redis);
        for (int i = 0; i < PAIRS; i++) {
            assertThat(lock.withLock("order", TTL, lease -> Mono.just(lease.fencingToken())).block()).isPositive();
        }
        Map<String, Long> perPair = perPair(before, CommandStats.all(redis));
        report("ours with a fencing token, one name", perPair);
        assertThat(perPair).isEqualTo(OURS_FENCED);
    }

    @Test
    void afterAWaiterWasWokenTheSleepersMarkComesOffAndPairsCostTheSameAgain() {
        String clientsBefore = connectedClients();
        try (ReactiveRedisLock other = ReactiveRedisLock.create(redis.uri(), LockOptions.defaults())) {
            Sinks.Empty<Void> end = Sinks.empty();
            lock.withLock("order", TTL, lease -> end.asMono()).subscribe();
            await().until(() -> lock.activeLeases() == 1);
            Mono<Long> waiter = other.withLock("order", TTL, lease -> Mono.just(lease.fencingToken())).cache();
            waiter.subscribe();
            await().until(() -> "1".equals(redis.call("ZCARD", "lock:{order}:sleepers")));
            assertThat(redis.call("GET", "lock:{order}")).as("the lock carries the sleepers mark").endsWith("+");
            long published = CommandStats.calls(redis, "publish");
            end.tryEmitEmpty();
            assertThat(waiter.block(Duration.ofSeconds(10))).isPositive();
            assertThat(CommandStats.calls(redis, "publish")).as("the release woke the sleeper by name").isEqualTo(published + 1);
            assertThat(redis.call("EXISTS", "lock:{order}", "lock:{order}:sleepers")).as("the last release found nobody asleep")
                    .isEqualTo("0");
        }
        // Once the server has closed the other client's connections, its pub/sub commands (a SUBSCRIBE
        // still on its way when the waiter got the lock) can no longer land among the counted pairs.
        await().until(() -> connectedClients().equals(clientsBefore));
        Map<String, Long> before = CommandStats.all(redis);
        for (int i = 0; i < PAIRS; i++) {
            lock.withLock("order", TTL, Mono.just(i)).block();
        }
        assertThat(perPair(before, CommandStats.all(redis))).isEqualTo(OURS);
    }

    @Test
    void theSleepersMarkNeedsNoFencingRecord() {
        try (ReactiveRedisLock other = ReactiveRedisLock.create(redis.uri(), LockOptions.defaults())) {
            Sinks.Empty<Void> end = Sinks.empty();
            lock.withLock("order", TTL, lease -> end.asMono()).subscribe();
            await().until(() -> lock.activeLeases() == 1);
            redis.call("DEL", "lock:{order}:fence"); // as when a holder renews past the record's retention
            Mono<Long> waiter = other.withLock("order", TTL, lease -> Mono.just(lease.fencingToken())).cache();
            waiter.subscribe();
            await().until(() -> "1".equals(redis.call("ZCARD", "lock:{order}:sleepers")));
            assertThat(redis.call("GET", "lock:{order}")).as("the lock carries the mark").endsWith("+");
            assertThat(redis.call("EXISTS", "lock:{order}:fence")).as("no record is made for it").isEqualTo("0");
            long published = CommandStats.calls(redis, "publish");
            end.tryEmitEmpty();
            assertThat(waiter.block(Duration.ofSeconds(10))).as("a fencing token from the clock, not from the mark").isGreaterThan(1L);
            assertThat(CommandStats.calls(redis, "publish")).as("the release woke the sleeper by name").isEqualTo(published + 1);
        }
    }

    @Test
    void theRawFloorCostsFourCalls() {
        RedisClient client = RedisClient.create(redis.uri());
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            RedisCommands<String, String> commands = connection.sync();
            String sha = commands.scriptLoad(FLOOR_RELEASE);
            Map<String, Long> before = CommandStats.all(redis);
            for (int i = 0; i < PAIRS; i++) {
                String token = "token-" + i;
                assertThat(commands.set("floor", token, SetArgs.Builder.nx().px(TTL.toMillis()))).isEqualTo("OK");
                assertThat((Long) commands.evalsha(sha, ScriptOutputType.INTEGER, new String[] {"floor"}, token)).isEqualTo(1L);
            }
            Map<String, Long> perPair = perPair(before, CommandStats.all(redis));
            report("raw floor", perPair);
            assertThat(perPair).isEqualTo(FLOOR);
        } finally {
            client.shutdown();
        }
    }

    /** The calls of each command between two readings, per pair; the readings' own INFO left out. */
    private static Map<String, Long> perPair(Map<String, Long> before, Map<String, Long> after) {
        Map<String, Long> perPair = new TreeMap<>();
        after.forEach((command, calls) -> {
            long delta = calls - before.getOrDefault(command, 0L);
            if (delta != 0 && !command.equals("info")) {
                assertThat(delta % PAIRS).as("calls of %s over %d pairs (%d) are a whole number per pair", command, PAIRS, delta)
                        .isZero();
                perPair.put(command, delta / PAIRS);
            }
        });
        return perPair;
    }

    private void report(String what, Map<String, Long> perPair) {
        System.out.printf("[calls per pair] %s on %s: %d %s%n", what, redis.call("INFO", "server").lines()
                .filter(l -> l.startsWith("redis_version:") || l.startsWith("valkey_version:")).toList(),
                perPair.values().stream().mapToLong(Long::longValue).sum(), perPair);
    }

    private String connectedClients() {
        return redis.call("INFO", "clients").lines().filter(line -> line.startsWith("connected_clients:"))
                .findFirst().orElseThrow().trim();
    }
}
