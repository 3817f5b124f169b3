package io.reactivelock.bench;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import reactor.core.Disposable;
import reactor.core.publisher.Sinks;

/**
 * The memory cell: Redis bytes per held lock ({@code INFO memory used_memory} before and with N
 * locks held, on an emptied server) for this library, Redisson's {@code RLock} and the raw floor
 * ({@code SET key token NX PX}), each on the same lock keys. No timing: the figures do not depend
 * on the machine's load. The test {@code scale.RedisMemoryPerLockTest} measures this library's
 * waiters, fair waiters and released names too, and asserts the bounds.
 */
final class MemoryCell {

    private static final Duration TTL = Duration.ofSeconds(60);

    private MemoryCell() {}

    /** By contender: bytes and keys per held lock over {@code names} locks, and the bytes of one lock's keys. */
    static Map<String, double[]> run(RedisServer redis, RedisStats stats, int names) throws Exception {
        Map<String, double[]> perLock = new LinkedHashMap<>();
        perLock.put(Contenders.RAW, raw(redis, stats, names));
        perLock.put(Contenders.OURS + ", `Mono` body (no fencing token)", ours(redis, stats, names, false));
        perLock.put(Contenders.OURS + ", body sees the lease (fencing token)", ours(redis, stats, names, true));
        perLock.put(Contenders.REDISSON, redisson(redis, stats, names));
        redis.call("FLUSHALL");
        return perLock;
    }

    private static String name(int i) {
        return "order-%06d".formatted(i);
    }

    /** The lock key of name {@code i}: this library's, which Redisson and the raw floor use as their own. */
    private static String key(int i) {
        return "lock:{" + name(i) + "}";
    }

    private static double[] raw(RedisServer redis, RedisStats stats, int names) {
        RedisClient client = RedisClient.create(redis.uri());
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            String token = "x".repeat(41); // as long as this library's tokens (16 random bytes in hex, then the client's address)
            long empty = emptied(redis, stats);
            List<RedisFuture<String>> sets = new ArrayList<>();
            for (int i = 0; i < names; i++) {
                sets.add(connection.async().set(key(i), token, SetArgs.Builder.nx().px(TTL.toMillis())));
            }
            sets.forEach(set -> set.toCompletableFuture().join());
            return measured(redis, stats, names, empty);
        } finally {
            client.shutdown();
        }
    }

    /** Held by {@code withLock(name, ttl, lease -> ...)} when {@code fencing}, else by {@code withLock(name, ttl, Mono)}. */
    private static double[] ours(RedisServer redis, RedisStats stats, int names, boolean fencing) {
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                .renewalInterval(Duration.ofSeconds(40)).maxPendingAcquisitions(2 * names).build())) {
            long empty = emptied(redis, stats);
            Sinks.Empty<Void> end = Sinks.empty();
            List<Disposable> held = new ArrayList<>();
            AtomicReference<Throwable> failed = new AtomicReference<>();
            for (int i = 0; i < names; i++) {
                held.add((fencing ? lock.withLock(name(i), TTL, lease -> end.asMono()) : lock.withLock(name(i), TTL, end.asMono()))
                        .subscribe(v -> { }, e -> failed.compareAndSet(null, e)));
            }
            until(() -> {
                if (failed.get() != null) {
                    throw new IllegalStateException("an acquisition of the memory cell failed", failed.get());
                }
                return lock.activeLeases() == names;
            });
            double[] measured = measured(redis, stats, names, empty);
            end.tryEmitEmpty();
            until(() -> lock.activeLeases() == 0);
            return measured;
        }
    }

    private static double[] redisson(RedisServer redis, RedisStats stats, int names) {
        RedissonClient client = Contenders.redisson(RedisURI.create(redis.uri().toString()));
        try {
            long empty = emptied(redis, stats);
            List<CompletableFuture<Void>> locked = new ArrayList<>();
            for (int i = 0; i < names; i++) {
                RLock lock = client.getLock(key(i));
                locked.add(lock.lockAsync(TTL.toMillis(), TimeUnit.MILLISECONDS, i + 1L).toCompletableFuture());
            }
            locked.forEach(CompletableFuture::join);
            return measured(redis, stats, names, empty);
        } finally {
            client.shutdown();
        }
    }

    /** Empties the server and returns its used memory. */
    private static long emptied(RedisServer redis, RedisStats stats) {
        redis.call("FLUSHALL");
        return Long.parseLong(stats.info("memory", "used_memory"));
    }

    /**
     * Bytes and keys per held lock from {@code used_memory} and {@code DBSIZE}, then the bytes of
     * the first lock's keys ({@code MEMORY USAGE}: exact, where {@code used_memory} also moves with
     * hash table resizes and the contender's connections' buffers).
     */
    private static double[] measured(RedisServer redis, RedisStats stats, int names, long empty) {
        long used = Long.parseLong(stats.info("memory", "used_memory"));
        long keys = Long.parseLong(redis.call("DBSIZE"));
        long firstKeys = 0;
        for (String key : new String[] {key(0), key(0) + ":fence"}) {
            String bytes = redis.call("MEMORY", "USAGE", key, "SAMPLES", "0");
            firstKeys += bytes == null ? 0 : Long.parseLong(bytes);
        }
        return new double[] {(double) (used - empty) / names, (double) keys / names, firstKeys};
    }

    private static void until(BooleanSupplier condition) {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the memory cell's locks did not settle within 2 minutes");
            }
            Threads.sleep(20);
        }
    }
}
