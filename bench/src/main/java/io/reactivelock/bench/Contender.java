package io.reactivelock.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import reactor.core.publisher.Mono;

/**
 * One lock implementation under test, as a factory of {@linkplain Instance instances}: what one
 * application instance would create (its own client, connections, registry). Each cell makes the
 * instances it needs, one shared by all workers or one per worker, and closes them afterwards.
 *
 * <p>Every acquisition is a distinct owner in Redis (its own token, Redisson thread id or Spring
 * registry client id) unless noted, so that contention on one name is real contention in Redis.
 */
final class Contender {

    /** Lease TTL every contender uses (Redisson's watchdog default is the same 30 s). */
    static final long TTL_MILLIS = 30_000;

    /** What one application instance holds; a reactive one overrides {@link #run}, a blocking one {@link #runBlocking}. */
    interface Instance extends AutoCloseable {

        /** Acquires {@code key}, runs {@code body}, releases; completes after the release. */
        default Mono<Void> run(String key, Mono<Void> body) {
            throw new UnsupportedOperationException("blocking");
        }

        /**
         * Takes what {@code what} names, runs {@code body}, releases; completes after the release.
         * A lock takes the one name; a primitive's instance overrides this.
         */
        default Mono<Void> run(Workload.Acquisition what, Mono<Void> body) {
            return run(what.name(), body);
        }

        /** Blocking counterpart of {@link #run}: returns after the release. */
        default void runBlocking(String key, Runnable body) throws Exception {
            throw new UnsupportedOperationException("reactive");
        }

        @Override
        void close();
    }

    private final String name;
    private final boolean blocking;
    private final Supplier<Instance> factory;
    private final List<Instance> instances = new ArrayList<>();

    Contender(String name, boolean blocking, Supplier<Instance> factory) {
        this.name = name;
        this.blocking = blocking;
        this.factory = factory;
    }

    String name() {
        return name;
    }

    /** True if {@link #runBlocking} is the entry point, false for {@link #run}. */
    boolean blocking() {
        return blocking;
    }

    /** Creates the cell's instances; worker {@code w} then uses instance {@code w % count}. */
    void beforeCell(int count) {
        for (int i = 0; i < count; i++) {
            instances.add(factory.get());
        }
    }

    Mono<Void> run(int worker, Workload.Acquisition what, Mono<Void> body) {
        return instances.get(worker % instances.size()).run(what, body);
    }

    void runBlocking(int worker, String key, Runnable body) throws Exception {
        instances.get(worker % instances.size()).runBlocking(key, body);
    }

    /** Closes the cell's instances, once every worker has stopped. */
    void afterCell() {
        instances.forEach(Instance::close);
        instances.clear();
    }
}
