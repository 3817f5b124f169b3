package io.reactivelock;

import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import io.reactivelock.testing.ReactiveLockContract;

/** The {@link ReactiveLockContract} on the Redis client's fair lock, against a real Redis. */
@WithRedis
class FairReactiveRedisLockContractTest extends ReactiveRedisLockContractTest {

    FairReactiveRedisLockContractTest(RedisServer redis) {
        super(redis);
    }

    @Override
    protected ReactiveLock newLock(LockOptions options) {
        return client(options).fair();
    }
}
