package io.reactivelock;

import io.reactivelock.testing.InMemoryReactiveMultiLock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/** The {@link MultiLockContract} on the in-memory test double. */
class MultiLockInMemoryContractTest extends MultiLockContract {

    /** Every lock of one test shares its names, as every client of one Redis does. */
    private final InMemoryReactiveMultiLock store = InMemoryReactiveMultiLock.create();
    private final List<InMemoryReactiveMultiLock> created = new ArrayList<>();

    @Override
    protected ReactiveMultiLock newLock(LockOptions options) {
        InMemoryReactiveMultiLock lock = store.withOptions(options);
        created.add(lock);
        return lock;
    }

    @Override
    protected boolean isLocked(String name) {
        return store.isLocked(name);
    }

    @Override
    protected void expire(String name) {
        store.expire(name);
    }

    @Override
    protected boolean lockElsewhere(String name, Duration ttl) {
        return store.lockElsewhere(name, ttl);
    }

    @Override
    protected Set<String> namesLeft() {
        return store.names();
    }

    @Override
    protected int activeLeases() {
        return created.stream().mapToInt(InMemoryReactiveMultiLock::activeLeases).sum();
    }
}
