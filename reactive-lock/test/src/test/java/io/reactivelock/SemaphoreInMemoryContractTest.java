package io.reactivelock;

import io.reactivelock.testing.InMemoryReactiveSemaphore;
import io.reactivelock.testing.SemaphoreContract;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/** The {@link SemaphoreContract} on the in-memory test double. */
class SemaphoreInMemoryContractTest extends SemaphoreContract {

    /** Every semaphore of one test shares its permits, as every client of one Redis does. */
    private final InMemoryReactiveSemaphore store = InMemoryReactiveSemaphore.create();
    private final List<InMemoryReactiveSemaphore> created = new ArrayList<>();

    @Override
    protected ReactiveSemaphore newSemaphore(LockOptions options) {
        InMemoryReactiveSemaphore semaphore = store.withOptions(options);
        created.add(semaphore);
        return semaphore;
    }

    @Override
    protected int permitsHeld(String name) {
        return store.permitsHeld(name);
    }

    @Override
    protected void expirePermits(String name) {
        store.expire(name);
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
        return created.stream().mapToInt(InMemoryReactiveSemaphore::activeLeases).sum();
    }
}
