package io.reactivelock.redis;

import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveSemaphore;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import io.reactivelock.testing.SemaphoreContract;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.function.IntFunction;
import org.junit.jupiter.api.AfterEach;

/**
 * The {@link SemaphoreContract} on the Redis client's semaphores against a real Redis (in the
 * client's package, for its acquire script). A dead holder is one that ran the acquire script
 * itself and never came back; a lease expires by deleting the permits key.
 */
@WithRedis
class SemaphoreRedisContractTest extends SemaphoreContract {

    /** The permits of the live holders, as the scripts count them. */
    private static final String LIVE_PERMITS = """
            local t = redis.call('TIME')
            local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            local sum = 0
            for _, holder in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')) do
              sum = sum + tonumber(string.match(holder, '^%d+'))
            end
            return sum
            """;

    private final RedisServer redis;
    private final List<ReactiveRedisLock> created = new ArrayList<>();

    SemaphoreRedisContractTest(RedisServer redis) {
        this.redis = redis;
    }

    @AfterEach
    void closeSemaphores() {
        created.forEach(ReactiveRedisLock::close);
    }

    private static String key(String name) {
        return "lock:{" + name + "}:permits";
    }

    @Override
    protected IntFunction<ReactiveSemaphore> newSemaphores(LockOptions options) {
        ReactiveRedisLock client = ReactiveRedisLock.create(redis.uri(), options);
        created.add(client);
        return client::semaphore;
    }

    @Override
    protected int permitsHeld(String name) {
        return Integer.parseInt(redis.call("EVAL", LIVE_PERMITS, "1", key(name)));
    }

    @Override
    protected void expirePermits(String name) {
        redis.call("DEL", key(name));
    }

    @Override
    protected boolean holdElsewhere(String name, int capacity, int n, Duration ttl) {
        String member = n + ":" + UUID.randomUUID().toString().replace("-", "");
        return "1".equals(redis.call("EVAL", PrimitiveScripts.SEMAPHORE_ACQUIRE.source(), "1", key(name), member,
                Long.toString(ttl.toMillis()), Integer.toString(n), Integer.toString(capacity)));
    }

    @Override
    protected Set<String> namesLeft() {
        Set<String> keys = new TreeSet<>();
        redis.callList("KEYS", "lock:*").forEach(k -> keys.add(String.valueOf(k)));
        return keys;
    }

    @Override
    protected int activeLeases() {
        return created.stream().mapToInt(ReactiveRedisLock::activeLeases).sum();
    }
}
