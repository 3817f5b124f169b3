package io.reactivelock;

import io.reactivelock.testing.InMemoryReactiveLock;
import io.reactivelock.testing.SemaphoreContract;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.IntFunction;

/** The {@link SemaphoreContract} on the in-memory client's semaphores. */
class SemaphoreInMemoryContractTest extends SemaphoreContract {

    /** Every client of one test shares its keys, as every client of one Redis does. */
    private final InMemoryReactiveLock store = InMemoryReactiveLock.create();
    private final List<InMemoryReactiveLock> created = new ArrayList<>();

    @Override
    protected IntFunction<ReactiveSemaphore> newSemaphores(LockOptions options) {
        InMemoryReactiveLock client = store.withOptions(options);
        created.add(client);
        return client::semaphore;
    }

    @Override
    protected int permitsHeld(String name) {
        return store.permitsHeld(name);
    }

    @Override
    protected void expirePermits(String name) {
        store.expirePermits(name);
    }

    @Override
    protected boolean holdElsewhere(String name, int capacity, int n, Duration ttl) {
        return store.holdElsewhere(name, capacity, n, ttl);
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
