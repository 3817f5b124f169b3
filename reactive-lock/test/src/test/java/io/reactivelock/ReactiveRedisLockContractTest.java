package io.reactivelock;

import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import io.reactivelock.testing.ReactiveLockContract;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import io.reactivelock.redis.ReactiveRedisLock;

/** The {@link ReactiveLockContract} on a real Redis; a lease expires by deleting its key. */
@WithRedis
class ReactiveRedisLockContractTest extends ReactiveLockContract {

    private final RedisServer redis;
    private final List<ReactiveRedisLock> created = new ArrayList<>();

    ReactiveRedisLockContractTest(RedisServer redis) {
        this.redis = redis;
    }

    @AfterEach
    void closeLocks() {
        created.forEach(ReactiveRedisLock::close);
    }

    @Override
    protected ReactiveLock newLock(LockOptions options) {
        ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), options);
        created.add(lock);
        return lock;
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
