package io.reactivelock;

import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import io.reactivelock.testing.ReactiveLockContract;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;

/**
 * The {@link ReactiveLockContract} on the Redis client against a real standalone Redis, its
 * multi-lock from a client of the same server; a lease expires by deleting its key.
 */
@WithRedis
class ReactiveRedisLockContractTest extends ReactiveLockContract {

    private final RedisServer redis;
    private final List<ReactiveRedisLock> created = new ArrayList<>();

    ReactiveRedisLockContractTest(RedisServer redis) {
        this.redis = redis;
    }

    @AfterEach
    void closeClients() {
        created.forEach(ReactiveRedisLock::close);
    }

    /** A new client of the server, closed after the test. */
    ReactiveRedisLock client(LockOptions options) {
        ReactiveRedisLock client = ReactiveRedisLock.create(redis.uri(), options);
        created.add(client);
        return client;
    }

    @Override
    protected ReactiveLock newLock(LockOptions options) {
        return client(options);
    }

    @Override
    protected ReactiveMultiLock newMultiLock(LockOptions options) {
        return client(options).multiLock();
    }

    @Override
    protected void expireLease(String name) {
        redis.call("DEL", "lock:{" + name + "}");
    }

    @Override
    protected boolean isLocked(String name) {
        return "1".equals(redis.call("EXISTS", "lock:{" + name + "}"));
    }
}
