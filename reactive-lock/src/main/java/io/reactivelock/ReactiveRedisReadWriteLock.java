package io.reactivelock;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Function;
import reactor.core.publisher.Mono;

/**
 * A {@link ReactiveReadWriteLock} on one Redis server (standalone, or a Sentinel-managed master),
 * reached through Lettuce.
 *
 * <pre>{@code
 * ReactiveRedisReadWriteLock locks = ReactiveRedisReadWriteLock.create(RedisURI.create("redis://localhost:6379"));
 * Mono<Price> price = locks.withReadLock("catalog", Duration.ofSeconds(10), catalog.price(sku));
 * Mono<Void> reprice = locks.withWriteLock("catalog", Duration.ofSeconds(10), lease ->
 *         catalog.reprice(rules, lease.fencingToken()));
 * }</pre>
 *
 * <p>Protocol: the writer is a key holding its token, as the single lock's; the readers are a
 * sorted set of tokens scored by the server time at which each reader's lease ends, so readers
 * expire one by one (a choice that works on Redis 6.2; hash-field expiry would need 7.4); the
 * waiting writers are a sorted set of the same kind. Acquire, renewal and release are Lua
 * scripts. A release is announced on the name's channel and wakes a waiter of the instance at
 * once; other waiters poll with the options' backoff. Of the options, {@code fair} is ignored; the
 * others apply as for {@link ReactiveRedisLock}. Thread-safe; one instance serves the whole
 * application and closes what it created in {@link #closeAsync()}.
 */
public final class ReactiveRedisReadWriteLock extends RedisPrimitive implements ReactiveReadWriteLock {

    private ReactiveRedisReadWriteLock(LockOptions options, RedisConnections connections) {
        super(options, Primitive.READ_WRITE_LOCK, connections);
    }

    /** Connects to {@code uri} with the default options; see {@link #create(RedisURI, LockOptions)}. */
    public static ReactiveRedisReadWriteLock create(RedisURI uri) {
        return create(uri, LockOptions.defaults());
    }

    /**
     * Creates a client for {@code uri} and the two connections the lock needs (commands, and
     * pub/sub for release notices), all owned by it; as {@link ReactiveRedisLock#create(RedisURI,
     * LockOptions)}, the client rejects commands while disconnected. Connecting blocks: call it at
     * start-up.
     *
     * @throws io.lettuce.core.RedisConnectionException if Redis cannot be reached
     */
    public static ReactiveRedisReadWriteLock create(RedisURI uri, LockOptions options) {
        Objects.requireNonNull(options, "options");
        return new ReactiveRedisReadWriteLock(options, RedisConnections.open(uri));
    }

    /**
     * Opens the two connections from the caller's client, which must have a default
     * {@link RedisURI}; the lock closes its connections, not the client. Connecting blocks.
     */
    public static ReactiveRedisReadWriteLock create(RedisClient client, LockOptions options) {
        Objects.requireNonNull(options, "options");
        return new ReactiveRedisReadWriteLock(options, RedisConnections.open(client));
    }

    @Override
    public <T> Mono<T> withReadLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
        return core.withLock(name, ttl, options.acquireTimeout(), a -> store.readWrite(a, false), body);
    }

    @Override
    public <T> Mono<T> withWriteLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
        return core.withLock(name, ttl, options.acquireTimeout(), a -> store.readWrite(a, true), body);
    }

    /** How many readers and writers of this instance wait for {@code name} now; for tests. */
    int localWaiters(String name) {
        return store.readWriteWaiters(name);
    }
}
