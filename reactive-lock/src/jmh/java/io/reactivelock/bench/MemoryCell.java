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

    /** By contender: bytes and keys per held lock, over {@code names} locks. */
    static Map<String, double[]> run(RedisServer redis, RedisStats stats, int names) throws Exception {
        Map<String, double[]> perLock = new LinkedHashMap<>();
        perLock.put(Contenders.RAW, raw(redis, stats, names));
        perLock.put(Contenders.OURS, ours(redis, stats, names));
        perLock.put(Contenders.REDISSON, redisson(redis, stats, names));
        redis.call("FLUSHALL");
        return perLock;
    }

    private static String key(int i) {
        return "lock:{order-%06d}".formatted(i);
    }

    private static double[] raw(RedisServer redis, RedisStats stats, int names) {
        RedisClient client = RedisClient.create(redis.uri());
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            String token = "x".repeat(22); // as long as this library's tokens
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

    private static double[] ours(RedisServer redis, RedisStats stats, int names) {
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                .renewalInterval(Duration.ofSeconds(40)).maxPendingAcquisitions(names).build())) {
            long empty = emptied(redis, stats);
            Sinks.Empty<Void> end = Sinks.empty();
            List<Disposable> held = new ArrayList<>();
            for (int i = 0; i < names; i++) {
                held.add(lock.withLock("order-%06d".formatted(i), TTL, lease -> end.asMono()).subscribe());
            }
            until(() -> lock.activeLeases() == names);
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

    private static double[] measured(RedisServer redis, RedisStats stats, int names, long empty) {
        long used = Long.parseLong(stats.info("memory", "used_memory"));
        long keys = Long.parseLong(redis.call("DBSIZE"));
        return new double[] {(double) (used - empty) / names, (double) keys / names};
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
