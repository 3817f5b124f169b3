package io.reactivelock.bench;

import reactor.core.publisher.Mono;

/**
 * One lock implementation under test. A reactive contender runs each lock/body/unlock as a cold
 * {@code Mono}; a blocking one runs it on the calling platform thread.
 *
 * <p>Every acquisition is a distinct owner in Redis (its own token, Redisson thread id or Spring
 * registry client id) unless noted, so that contention on one name is real contention in Redis.
 */
abstract class Contender implements AutoCloseable {

    /** Lease TTL every contender uses (Redisson's watchdog default is the same 30 s). */
    static final long TTL_MILLIS = 30_000;

    private final String name;

    Contender(String name) {
        this.name = name;
    }

    final String name() {
        return name;
    }

    /** True if {@link #runBlocking} is the entry point, false for {@link #run}. */
    abstract boolean blocking();

    /** Acquires {@code key} as worker {@code worker}, runs {@code body}, releases; completes after the release. */
    Mono<Void> run(int worker, String key, Mono<Void> body) {
        throw new UnsupportedOperationException(name + " is blocking");
    }

    /** Blocking counterpart of {@link #run}: returns after the release. */
    void runBlocking(int worker, String key, Runnable body) throws Exception {
        throw new UnsupportedOperationException(name + " is reactive");
    }

    /**
     * Called before each cell. {@code contended} says that all {@code workers} use one lock name
     * (each worker then stands for a separate application instance).
     */
    void beforeCell(int workers, boolean contended) {}

    /** Called after each cell, once every worker has stopped. */
    void afterCell() {}

    @Override
    public abstract void close();
}
