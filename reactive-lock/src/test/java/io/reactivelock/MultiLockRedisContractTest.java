package io.reactivelock;

import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import io.reactivelock.redis.ReactiveRedisLock;

/**
 * The {@link MultiLockContract} on a real Redis, with the single lock's keys: a name is held while
 * {@code lock:{name}} exists; a holder elsewhere is a token set there that nobody renews.
 */
@WithRedis
class MultiLockRedisContractTest extends MultiLockContract {

    private final RedisServer redis;
    private final List<ReactiveRedisLock> created = new ArrayList<>();

    MultiLockRedisContractTest(RedisServer redis) {
        this.redis = redis;
    }

    @AfterEach
    void closeLocks() {
        created.forEach(ReactiveRedisLock::close);
    }

    @Override
    protected ReactiveMultiLock newLock(LockOptions options) {
        ReactiveRedisLock client = ReactiveRedisLock.create(redis.uri(), options);
        created.add(client);
        return client.multiLock();
    }

    @Override
    protected boolean isLocked(String name) {
        return "1".equals(redis.call("EXISTS", "lock:{" + name + "}"));
    }

    @Override
    protected void expire(String name) {
        redis.call("DEL", "lock:{" + name + "}");
    }

    @Override
    protected boolean lockElsewhere(String name, Duration ttl) {
        return "OK".equals(redis.call("SET", "lock:{" + name + "}", UUID.randomUUID().toString(), "NX", "PX",
                Long.toString(ttl.toMillis())));
    }

    /** The names of every key but the fencing records: locks and sleepers. */
    @Override
    protected Set<String> namesLeft() {
        Set<String> names = new TreeSet<>();
        for (Object key : redis.callList("KEYS", "lock:*")) {
            String k = String.valueOf(key);
            if (!k.endsWith(":fence")) {
                names.add(k.substring(k.indexOf('{') + 1, k.lastIndexOf('}')));
            }
        }
        return names;
    }

    @Override
    protected int activeLeases() {
        return created.stream().mapToInt(ReactiveRedisLock::activeLeases).sum();
    }
}
