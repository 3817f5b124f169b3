package io.reactivelock.redis;

import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import io.reactivelock.testing.ReadWriteLockContract;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;

/**
 * The {@link ReadWriteLockContract} on the Redis client's read-write lock against a real Redis (in
 * the client's package, for its acquire scripts). A dead holder is one that ran the acquire
 * script itself and never came back; leases expire by deleting the writer and readers keys.
 */
@WithRedis
class ReadWriteRedisContractTest extends ReadWriteLockContract {

    /** The members of a lease set whose lease has not ended, by the server's clock. */
    private static final String LIVE_MEMBERS = """
            local t = redis.call('TIME')
            local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            return redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')
            """;

    private final RedisServer redis;
    private final List<ReactiveRedisLock> created = new ArrayList<>();

    ReadWriteRedisContractTest(RedisServer redis) {
        this.redis = redis;
    }

    @AfterEach
    void closeLocks() {
        created.forEach(ReactiveRedisLock::close);
    }

    private static String key(String name, String part) {
        return "lock:{" + name + "}:rw:" + part;
    }

    private static String newToken() {
        return UUID.randomUUID().toString().replace("-", "");
    }

    @Override
    protected ReactiveReadWriteLock newLock(LockOptions options) {
        ReactiveRedisLock client = ReactiveRedisLock.create(redis.uri(), options);
        created.add(client);
        return client.readWriteLock();
    }

    @Override
    protected int readers(String name) {
        return Integer.parseInt(redis.call("EVAL", LIVE_MEMBERS, "1", key(name, "readers")));
    }

    @Override
    protected boolean isWriteLocked(String name) {
        return "1".equals(redis.call("EXISTS", key(name, "writer")));
    }

    @Override
    protected int writersWaiting(String name) {
        return Integer.parseInt(redis.call("EVAL", LIVE_MEMBERS, "1", key(name, "writers-waiting")));
    }

    @Override
    protected void expire(String name) {
        redis.call("DEL", key(name, "writer"), key(name, "readers"));
    }

    @Override
    protected boolean readElsewhere(String name, Duration ttl) {
        return "1".equals(redis.call("EVAL", PrimitiveScripts.READ_ACQUIRE.source(), "3", key(name, "writer"),
                key(name, "readers"), key(name, "writers-waiting"), newToken(), Long.toString(ttl.toMillis())));
    }

    @Override
    protected boolean writeElsewhere(String name, Duration ttl) {
        return !"0".equals(redis.call("EVAL", PrimitiveScripts.WRITE_ACQUIRE.source(), "4", key(name, "writer"),
                key(name, "writer:fence"), key(name, "readers"), key(name, "writers-waiting"), newToken(),
                Long.toString(ttl.toMillis()), "60000", "1000"));
    }

    @Override
    protected Set<String> namesLeft() {
        Set<String> keys = new TreeSet<>();
        redis.callList("KEYS", "lock:*").forEach(k -> keys.add(String.valueOf(k)));
        keys.removeIf(k -> k.endsWith(":fence"));
        return keys;
    }

    @Override
    protected int activeLeases() {
        return created.stream().mapToInt(ReactiveRedisLock::activeLeases).sum();
    }
}
