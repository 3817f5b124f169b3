package io.reactivelock;

import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import io.reactivelock.testing.ReactiveLockContract;

/** The {@link ReactiveLockContract} on a real Redis in fair mode. */
@WithRedis
class FairReactiveRedisLockContractTest extends ReactiveRedisLockContractTest {

    FairReactiveRedisLockContractTest(RedisServer redis) {
        super(redis);
    }

    @Override
    protected ReactiveLock newLock(LockOptions options) {
        return super.newLock(options.toBuilder().fair(true).build());
    }
}
