package io.reactivelock;

import io.reactivelock.testing.InMemoryReactiveLock;
import io.reactivelock.testing.ReactiveLockContract;

/** The {@link ReactiveLockContract} on the in-memory client, its multi-lock on the same keys. */
class InMemoryReactiveLockContractTest extends ReactiveLockContract {

    /** Every client of one test shares its keys, as every client of one Redis does. */
    private final InMemoryReactiveLock store = InMemoryReactiveLock.create();

    @Override
    protected ReactiveLock newLock(LockOptions options) {
        return store.withOptions(options);
    }

    @Override
    protected ReactiveMultiLock newMultiLock(LockOptions options) {
        return store.withOptions(options).multiLock();
    }

    @Override
    protected void expireLease(String name) {
        store.expire(name);
    }

    @Override
    protected boolean isLocked(String name) {
        return store.isLocked(name);
    }
}
