package io.reactivelock;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.reactivelock.internal.PermitArguments;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Function;
import reactor.core.publisher.Mono;

/**
 * A {@link ReactiveSemaphore} on one Redis server (standalone, or a Sentinel-managed master),
 * reached through Lettuce.
 *
 * <pre>{@code
 * ReactiveRedisSemaphore permits = ReactiveRedisSemaphore.create(RedisURI.create("redis://localhost:6379"));
 * // At most 4 exports at once across the fleet; a big one takes 2 permits.
 * Mono<Report> report = permits.withPermits("exports", 4, big ? 2 : 1, Duration.ofSeconds(30), export(id));
 * }</pre>
 *
 * <p>Protocol: the holders of a name are one sorted set scored by the server time at which each
 * holder's lease ends; acquire, renewal and release are Lua scripts that first drop the holders
 * whose lease has ended. A release is announced on the name's channel and wakes a waiter of the
 * instance at once; other waiters poll with the options' backoff. Of the options, {@code fair}
 * is ignored (the semaphore is not fair); the others apply as for {@link ReactiveRedisLock}.
 * Thread-safe; one instance serves the whole application and closes what it created in
 * {@link #closeAsync()}.
 */
public final class ReactiveRedisSemaphore extends RedisPrimitive implements ReactiveSemaphore {

    private ReactiveRedisSemaphore(LockOptions options, RedisConnections connections) {
        super(options, Primitive.SEMAPHORE, connections);
    }

    /** Connects to {@code uri} with the default options; see {@link #create(RedisURI, LockOptions)}. */
    public static ReactiveRedisSemaphore create(RedisURI uri) {
        return create(uri, LockOptions.defaults());
    }

    /**
     * Creates a client for {@code uri} and the two connections the semaphore needs (commands, and
     * pub/sub for release notices), all owned by it; as {@link ReactiveRedisLock#create(RedisURI,
     * LockOptions)}, the client rejects commands while disconnected. Connecting blocks: call it at
     * start-up.
     *
     * @throws io.lettuce.core.RedisConnectionException if Redis cannot be reached
     */
    public static ReactiveRedisSemaphore create(RedisURI uri, LockOptions options) {
        Objects.requireNonNull(options, "options");
        return new ReactiveRedisSemaphore(options, RedisConnections.open(uri));
    }

    /**
     * Opens the two connections from the caller's client, which must have a default
     * {@link RedisURI}; the semaphore closes its connections, not the client. Connecting blocks.
     */
    public static ReactiveRedisSemaphore create(RedisClient client, LockOptions options) {
        Objects.requireNonNull(options, "options");
        return new ReactiveRedisSemaphore(options, RedisConnections.open(client));
    }

    @Override
    public <T> Mono<T> withPermits(String name, int capacity, int n, Duration ttl,
            Function<? super LockLease, ? extends Mono<T>> body) {
        PermitArguments.check(name, capacity, n, core.listener());
        return core.withLock(name, ttl, options.acquireTimeout(), a -> store.permits(a, capacity, n), body);
    }
}
