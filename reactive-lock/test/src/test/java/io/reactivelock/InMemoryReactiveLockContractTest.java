package io.reactivelock;

import io.reactivelock.testing.InMemoryReactiveLock;
import io.reactivelock.testing.ReactiveLockContract;

/** The {@link ReactiveLockContract} on the in-memory test double. */
class InMemoryReactiveLockContractTest extends ReactiveLockContract {

    /** Every lock of one test shares its store, as every client of one Redis does. */
    private final InMemoryReactiveLock store = InMemoryReactiveLock.create();

    @Override
    protected ReactiveLock newLock(LockOptions options) {
        return store.withOptions(options);
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
