package io.reactivelock;

import io.reactivelock.testing.InMemoryReactiveReadWriteLock;
import io.reactivelock.testing.ReadWriteLockContract;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/** The {@link ReadWriteLockContract} on the in-memory test double. */
class ReadWriteInMemoryContractTest extends ReadWriteLockContract {

    /** Every lock of one test shares its names, as every client of one Redis does. */
    private final InMemoryReactiveReadWriteLock store = InMemoryReactiveReadWriteLock.create();
    private final List<InMemoryReactiveReadWriteLock> created = new ArrayList<>();

    @Override
    protected ReactiveReadWriteLock newLock(LockOptions options) {
        InMemoryReactiveReadWriteLock lock = store.withOptions(options);
        created.add(lock);
        return lock;
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
        store.expire(name);
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
        return created.stream().mapToInt(InMemoryReactiveReadWriteLock::activeLeases).sum();
    }
}
