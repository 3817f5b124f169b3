package io.reactivelock;

import io.reactivelock.internal.LockCore;
import io.reactivelock.internal.ReleaseNotices;
import reactor.core.publisher.Mono;

/**
 * What {@link ReactiveRedisSemaphore} and {@link ReactiveRedisReadWriteLock} share: their
 * connections, one {@link PrimitiveStore} and the core over it, and how they close.
 */
abstract class RedisPrimitive implements AutoCloseable {

    final LockOptions options;
    final PrimitiveStore store;
    final LockCore<PrimitiveStore.Call> core;
    private final RedisConnections connections;

    RedisPrimitive(LockOptions options, Primitive primitive, RedisConnections connections) {
        this.options = options;
        this.connections = connections;
        this.store = new PrimitiveStore(options, connections.scripts(), new ReleaseNotices<>(connections.pubSub(), options.maxBackoff()));
        this.core = new LockCore<>(options, primitive, store);
    }

    /** Bodies running with their renewal watchdog now; zero once every call has ended. */
    public int activeLeases() {
        return core.activeLeases();
    }

    /** The options this instance was created with. */
    public LockOptions options() {
        return options;
    }

    /**
     * Closes the connections (and the client, if this instance created it), without blocking.
     * Later acquisitions fail with {@link LockClosedException}; what is held stays until released
     * or expired.
     */
    public Mono<Void> closeAsync() {
        return Mono.defer(() -> core.close() ? Mono.fromCompletionStage(connections.close().get()).then() : Mono.empty());
    }

    /** Blocking {@link #closeAsync()}, for shutdown code. */
    @Override
    public void close() {
        closeAsync().block();
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "{" + options + "}";
    }
}
