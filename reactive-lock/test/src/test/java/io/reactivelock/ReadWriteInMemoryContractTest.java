package io.reactivelock;

import io.reactivelock.testing.InMemoryReactiveLock;
import io.reactivelock.testing.ReadWriteLockContract;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/** The {@link ReadWriteLockContract} on the in-memory client's read-write lock. */
class ReadWriteInMemoryContractTest extends ReadWriteLockContract {

    /** Every client of one test shares its keys, as every client of one Redis does. */
    private final InMemoryReactiveLock store = InMemoryReactiveLock.create();
    private final List<InMemoryReactiveLock> created = new ArrayList<>();

    @Override
    protected ReactiveReadWriteLock newLock(LockOptions options) {
        InMemoryReactiveLock client = store.withOptions(options);
        created.add(client);
        return client.readWriteLock();
    }

    @Override
    protected int readers(String name) {
        return store.readers(name);
    }

    @Override
    protected boolean isWriteLocked(String name) {
        return store.isWriteLocked(name);
    }

    @Override
    protected int writersWaiting(String name) {
        return store.writersWaiting(name);
    }

    @Override
    protected void expire(String name) {
        store.expireReadWriteLock(name);
    }

    @Override
    protected boolean readElsewhere(String name, Duration ttl) {
        return store.readElsewhere(name, ttl);
    }

    @Override
    protected boolean writeElsewhere(String name, Duration ttl) {
        return store.writeElsewhere(name, ttl);
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
