package io.reactivelock.scale;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * What the locks cost Redis in memory, from {@code INFO memory} ({@code used_memory}) deltas over
 * many names, and that nothing outlives its purpose: a held lock, a waiting acquisition (a
 * non-fair sleeper and its release channel's subscription), a fair waiter, a released name (its
 * fencing record, kept the lease TTL plus 60 s), beside the raw floor ({@code SET key token NX PX},
 * one key per held lock). Prints the figures ({@code [memory]} lines in the test's output) and
 * asserts bounds on them. 2,000 names in the build; docs/cost-per-lock.md's table was measured with
 * {@code -Dmemory.names=10000}.
 */
@WithRedis
class RedisMemoryPerLockTest {

    private static final int NAMES = Integer.getInteger("memory.names", 2_000);
    private static final Duration TTL = Duration.ofSeconds(60);
    /** The fencing record's retention beyond the lease ({@code RedisStore.FENCE_RETENTION}). */
    private static final Duration FENCE_RETENTION = Duration.ofSeconds(60);
    private static final Duration PHASE = Duration.ofMinutes(2);

    private final RedisServer redis;

    RedisMemoryPerLockTest(RedisServer redis) {
        this.redis = redis;
    }

    /**
     * Holders renew rarely and waiters call rarely, so that the phases measure state, not traffic;
     * the longest backoff step is also how long a release channel stays subscribed after its last
     * waiter left, which the phases that cancel waiters wait out.
     */
    private static LockOptions quiet() {
        return LockOptions.builder()
                .renewalInterval(Duration.ofSeconds(40))
                .backoff(Duration.ofMillis(50), Duration.ofSeconds(2))
                .acquireTimeout(Duration.ofMinutes(5))
                .maxPendingAcquisitions(2 * NAMES)
                .build();
    }

    private static String name(int i) {
        return "order-%05d".formatted(i);
    }

    /** Bytes of each of the raw floor's keys ({@code MEMORY USAGE}), set by {@link #floorBytesPerHeldLock}. */
    private long floorKeyBytes;

    @Test
    void aHeldLockAWaiterAFairWaiterAndAReleasedNameCostBoundedMemoryAndOnlyFencingRecordsRemain() {
        long floor = floorBytesPerHeldLock();
        redis.call("FLUSHALL");

        try (ReactiveRedisLock holders = ReactiveRedisLock.create(redis.uri(), quiet());
                ReactiveRedisLock waiters = ReactiveRedisLock.create(redis.uri(), quiet())) {
            long empty = usedMemory();

            Sinks.Empty<Void> end = Sinks.empty();
            List<Disposable> held = new ArrayList<>();
            for (int i = 0; i < NAMES; i++) {
                held.add(holders.withLock(name(i), TTL, lease -> end.asMono()).subscribe());
            }
            await().atMost(PHASE).until(() -> dbsize() == 2L * NAMES); // lock and fencing record per name
            long heldMemory = usedMemory();
            long heldKeys = keyBytes(":fence", "");

            List<Disposable> waiting = wait(waiters, NAMES);
            // A sleeper per name, and its release channel subscribed by the waiting client.
            await().atMost(PHASE).until(() -> dbsize() == 3L * NAMES && channels() == NAMES);
            long waitingMemory = usedMemory();
            long sleeperKey = keyBytes(":sleepers");
            waiting.forEach(Disposable::dispose);
            // The waiters leave; their channels go after the linger (one longest backoff step).
            await().atMost(PHASE).until(() -> dbsize() == 2L * NAMES && channels() == 0);
            long afterWaiters = usedMemory();

            List<Disposable> inLine = wait(waiters.fair(), NAMES);
            await().atMost(PHASE).until(() -> dbsize() == 4L * NAMES && channels() == NAMES); // queue and deadlines
            long fairMemory = usedMemory();
            long lineKeys = keyBytes(":queue", ":waiters");
            inLine.forEach(Disposable::dispose);
            await().atMost(PHASE).until(() -> dbsize() == 2L * NAMES && channels() == 0);

            end.tryEmitEmpty();
            await().atMost(PHASE).until(() -> dbsize() == NAMES && holders.activeLeases() == 0);
            long releasedMemory = usedMemory();
            long releasedKeys = keyBytes(":fence");
            held.forEach(Disposable::dispose);

            double perHeld = perName(heldMemory - empty);
            double perWaiter = perName(waitingMemory - heldMemory);
            double perFairWaiter = perName(fairMemory - afterWaiters);
            double perReleased = perName(releasedMemory - empty);
            System.out.printf("[memory] %s, %d names, used_memory delta per name: held lock %.0f B (raw floor %d B), "
                    + "waiter %.0f B (sleeper and subscription), fair waiter %.0f B, released name %.0f B (fencing record)%n",
                    version(), NAMES, perHeld, floor, perWaiter, perFairWaiter, perReleased);
            System.out.printf("[memory] %s, MEMORY USAGE of one name's keys: held lock %d B (raw floor %d B), sleepers %d B, "
                    + "fair line %d B, released %d B%n", version(), heldKeys, floorKeyBytes, sleeperKey, lineKeys, releasedKeys);

            List<Object> left = remaining();
            assertThat((Long) left.get(0)).as("keys left after every release").isEqualTo(NAMES);
            assertThat((Long) left.get(1)).as("keys left that are not fencing records").isZero();
            assertThat((Long) left.get(2)).as("the longest TTL left (ms): at most the lease TTL plus the retention")
                    .isPositive().isLessThanOrEqualTo(TTL.plus(FENCE_RETENTION).toMillis());
            assertThat((Long) left.get(3)).as("the shortest TTL left (ms): every record expires").isPositive();
            // The keys themselves, exactly: a held lock is the raw floor's key and a fencing record as small.
            assertThat(heldKeys).as("a held lock's keys").isLessThanOrEqualTo(2 * floorKeyBytes + 16);
            assertThat(releasedKeys).as("a released name's key").isLessThanOrEqualTo(floorKeyBytes + 16);
            // With what Redis spends around them (hash table slots, expiry entries, the channel of a
            // subscription): used_memory moves with table resizes, so these bounds leave room for one.
            assertThat(perHeld).as("a held lock").isLessThanOrEqualTo(3.0 * floor);
            assertThat(perWaiter).as("a waiter").isLessThanOrEqualTo(4.0 * floor);
            assertThat(perFairWaiter).as("a fair waiter").isLessThanOrEqualTo(5.0 * floor);
            assertThat(perReleased).as("a released name").isLessThanOrEqualTo(2.0 * floor);
        }
    }

    @Test
    void everyKeyLeftExpiresWithinTheLeaseTtlPlusTheRetention() {
        int names = 100;
        // A 5 s lease renewed every 1.7 s, and waiters that wait a minute: the exact key counts below hold on a busy
        // machine (with a 1 s lease, two busy loops beside it once made holders lose leases and the count never settle).
        Duration ttl = Duration.ofSeconds(5);
        try (ReactiveRedisLock holders = ReactiveRedisLock.create(redis.uri());
                ReactiveRedisLock waiters = ReactiveRedisLock.create(redis.uri(),
                        LockOptions.builder().acquireTimeout(Duration.ofMinutes(1)).build())) {
            Sinks.Empty<Void> end = Sinks.empty();
            for (int i = 0; i < names; i++) {
                holders.withLock(name(i), ttl, lease -> end.asMono()).subscribe();
                holders.fair().withLock("fair-" + name(i), ttl, lease -> end.asMono()).subscribe();
            }
            await().atMost(PHASE).until(() -> dbsize() == 4L * names);
            List<Disposable> waiting = new ArrayList<>();
            for (int i = 0; i < names; i++) {
                waiting.add(waiters.withLock(name(i), ttl, lease -> Mono.empty()).subscribe());
                waiting.add(waiters.fair().withLock("fair-" + name(i), ttl, lease -> Mono.empty()).subscribe());
            }
            // Per name a sleeper; per fair name a line and its deadlines.
            await().atMost(PHASE).until(() -> dbsize() == 7L * names);
            end.tryEmitEmpty(); // each release lets the name's waiter in, which then releases too
            await().atMost(PHASE).until(() -> holders.activeLeases() == 0 && waiters.activeLeases() == 0
                    && waiting.stream().allMatch(Disposable::isDisposed));
            List<Object> left = remaining();
            assertThat((Long) left.get(0)).as("keys left after every release: one fencing record per name").isEqualTo(2L * names);
            assertThat((Long) left.get(1)).as("keys left that are not fencing records").isZero();
            assertThat((Long) left.get(2)).as("the longest TTL left (ms)").isLessThanOrEqualTo(ttl.plus(FENCE_RETENTION).toMillis());
            assertThat((Long) left.get(3)).as("the shortest TTL left (ms): every record expires").isPositive();
            // Every key left expires by then, so Redis's own expiry removes them all within the lease TTL plus the
            // retention; waiting for it would time Redis, not the library (the lower bound: FenceRetentionTest).
        }
    }

    /** An acquisition per name that waits (the names are held); each is cancelled by disposing it. */
    private static List<Disposable> wait(ReactiveLock lock, int names) {
        List<Disposable> waiting = new ArrayList<>();
        for (int i = 0; i < names; i++) {
            waiting.add(lock.withLock(name(i), TTL, lease -> Mono.empty()).subscribe(v -> {}, e -> {}));
        }
        return waiting;
    }

    /** A plain {@code SET key token NX PX} per name, with the keys and tokens the lock uses, one round trip each pipelined. */
    private long floorBytesPerHeldLock() {
        RedisClient client = RedisClient.create(redis.uri());
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            String token = sampleToken();
            redis.call("FLUSHALL");
            long empty = usedMemory();
            List<RedisFuture<String>> sets = new ArrayList<>();
            for (int i = 0; i < NAMES; i++) {
                sets.add(connection.async().set("lock:{" + name(i) + "}", token, SetArgs.Builder.nx().px(TTL.toMillis())));
            }
            sets.forEach(set -> assertThat(set.toCompletableFuture().join()).isEqualTo("OK"));
            assertThat(dbsize()).isEqualTo(NAMES);
            floorKeyBytes = memoryUsage("lock:{" + name(0) + "}");
            return Math.round(perName(usedMemory() - empty));
        } finally {
            client.shutdown();
        }
    }

    /** A token as the lock makes them, so that the floor's values are as long as ours. */
    private String sampleToken() {
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri())) {
            Sinks.Empty<Void> end = Sinks.empty();
            lock.withLock("sample", TTL, lease -> end.asMono()).subscribe();
            await().atMost(PHASE).until(() -> lock.activeLeases() == 1);
            String token = redis.call("GET", "lock:{sample}");
            end.tryEmitEmpty();
            await().atMost(PHASE).until(() -> lock.activeLeases() == 0);
            return token;
        }
    }

    /** How many keys there are, how many of them are not fencing records, and their longest and shortest TTL (ms). */
    private List<Object> remaining() {
        return redis.callList("EVAL", """
                local keys, others, longest, shortest = redis.call('KEYS', '*'), 0, -2, -2
                for _, key in ipairs(keys) do
                  if not string.find(key, ':fence$') then others = others + 1 end
                  local ttl = redis.call('PTTL', key)
                  if ttl > longest then longest = ttl end
                  if shortest == -2 or ttl < shortest then shortest = ttl end
                end
                return {#keys, others, longest, shortest}
                """, "0");
    }

    /** The bytes ({@code MEMORY USAGE}) of the first name's keys with these suffixes. */
    private long keyBytes(String... suffixes) {
        long bytes = 0;
        for (String suffix : suffixes) {
            bytes += memoryUsage("lock:{" + name(0) + "}" + suffix);
        }
        return bytes;
    }

    private long memoryUsage(String key) {
        String bytes = redis.call("MEMORY", "USAGE", key, "SAMPLES", "0");
        assertThat(bytes).as("MEMORY USAGE of %s (it exists)", key).isNotNull();
        return Long.parseLong(bytes);
    }

    private static double perName(long bytes) {
        return (double) bytes / NAMES;
    }

    private long dbsize() {
        return Long.parseLong(redis.call("DBSIZE"));
    }

    private long channels() {
        return redis.callList("PUBSUB", "CHANNELS", "lock:*").size();
    }

    private long usedMemory() {
        return Long.parseLong(redis.info("memory", "used_memory"));
    }

    private String version() {
        String valkey = redis.info("server", "valkey_version");
        return valkey != null ? "Valkey " + valkey : "Redis " + redis.info("server", "redis_version");
    }
}
