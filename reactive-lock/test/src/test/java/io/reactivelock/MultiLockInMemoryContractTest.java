package io.reactivelock;

import io.reactivelock.testing.InMemoryReactiveLock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/** The {@link MultiLockContract} on the in-memory client's multi-lock. */
class MultiLockInMemoryContractTest extends MultiLockContract {

    /** Every client of one test shares its keys, as every client of one Redis does. */
    private final InMemoryReactiveLock store = InMemoryReactiveLock.create();
    private final List<InMemoryReactiveLock> created = new ArrayList<>();

    @Override
    protected ReactiveMultiLock newLock(LockOptions options) {
        InMemoryReactiveLock client = store.withOptions(options);
        created.add(client);
        return client.multiLock();
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
        return created.stream().mapToInt(InMemoryReactiveLock::activeLeases).sum();
    }
}
