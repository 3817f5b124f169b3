package io.reactivelock;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.pubsub.StatefulRedisClusterPubSubConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.reactivelock.internal.LockCore;
import io.reactivelock.internal.ReleaseNotices;
import io.reactivelock.internal.ScriptExecutor;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * A {@link ReactiveLock} on one Redis deployment reached through Lettuce: a standalone server,
 * a Sentinel-managed master (a Sentinel {@link RedisURI}) or a Cluster.
 *
 * <pre>{@code
 * ReactiveRedisLock locks = ReactiveRedisLock.create(RedisURI.create("redis://localhost:6379"));
 * Mono<Receipt> receipt = locks.withLock("order:" + id, Duration.ofSeconds(10), pay(id));
 * }</pre>
 *
 * <p>Protocol: acquire is one Lua script ({@code SET key token NX PX ttl} and a fencing token);
 * release and renewal are Lua compare-and-act scripts on the token; all run by {@code EVALSHA}.
 * Thread-safe; one instance serves the whole application. It starts no threads of its own:
 * timers run on {@link LockOptions#scheduler()} and replies arrive on Lettuce's event loops.
 *
 * <p>An instance made from a {@link RedisURI} owns its client and connection and closes them in
 * {@link #closeAsync()}; one made from a connection never closes it.
 */
public final class ReactiveRedisLock implements ReactiveLock, AutoCloseable {

    private final LockOptions options;
    private final RedisStore store;
    private final LockCore<RedisStore.Call> core;
    private final Supplier<CompletionStage<?>> closeResources;

    private ReactiveRedisLock(LockOptions options, ScriptExecutor scripts,
            @Nullable StatefulRedisPubSubConnection<String, String> pubSub, Supplier<CompletionStage<?>> closeResources) {
        this.options = Objects.requireNonNull(options, "options");
        ReleaseNotices<RedisStore.Call> notices = pubSub == null ? null : new ReleaseNotices<>(pubSub, options.maxBackoff());
        this.store = options.fair() ? new FairRedisStore(options, scripts, notices) : new RedisStore(options, scripts, notices);
        this.core = new LockCore<>(options, Primitive.LOCK, store);
        this.closeResources = closeResources;
    }

    /** Connects to {@code uri} with the default options; see {@link #create(RedisURI, LockOptions)}. */
    public static ReactiveRedisLock create(RedisURI uri) {
        return create(uri, LockOptions.defaults());
    }

    /**
     * Creates a client for {@code uri} (standalone or Sentinel) and the two connections this lock
     * needs (commands, and pub/sub for release notices), all owned by this lock. Connecting
     * blocks: call it at start-up, not on a reactive thread. The client rejects commands while
     * disconnected, so an attempt made during an outage fails fast and is retried with backoff
     * instead of being buffered and replayed after its caller gave up.
     *
     * @throws io.lettuce.core.RedisConnectionException if Redis cannot be reached
     */
    public static ReactiveRedisLock create(RedisURI uri, LockOptions options) {
        Objects.requireNonNull(options, "options");
        return connected(RedisConnections.open(uri), options);
    }

    /**
     * Opens the two connections this lock needs (commands, and pub/sub for release notices) from
     * the caller's client, which must have a default {@link RedisURI}. The lock owns and closes
     * the connections, not the client. Connecting blocks: call it at start-up. Give the client
     * {@code DisconnectedBehavior.REJECT_COMMANDS}, as {@link #create(RedisURI, LockOptions)} does, so that
     * attempts fail fast during an outage instead of being buffered and replayed on reconnect.
     */
    public static ReactiveRedisLock create(RedisClient client, LockOptions options) {
        Objects.requireNonNull(options, "options");
        return connected(RedisConnections.open(client), options);
    }

    private static ReactiveRedisLock connected(RedisConnections connections, LockOptions options) {
        return new ReactiveRedisLock(options, connections.scripts(), connections.pubSub(), connections.close());
    }

    /**
     * Uses the caller's connection, which it never closes. Without a pub/sub connection waiters
     * poll with backoff only; prefer {@link #create(RedisClient, LockOptions)} under contention.
     * The connection's client should reject commands while disconnected, as for that factory.
     */
    public static ReactiveRedisLock create(StatefulRedisConnection<String, String> connection, LockOptions options) {
        Objects.requireNonNull(connection, "connection");
        return new ReactiveRedisLock(options, new ScriptExecutor(connection.async()), null,
                () -> CompletableFuture.completedFuture(null));
    }

    /**
     * Opens the two Cluster connections this lock needs (commands, routed by hash slot, and pub/sub
     * for release notices) from the caller's client. The lock owns and closes the connections, not
     * the client. All keys of one lock share a hash slot, and a release notice reaches a subscriber
     * on any node. Connecting blocks: call it at start-up.
     *
     * <p>Give the client {@link io.lettuce.core.cluster.ClusterTopologyRefreshOptions topology
     * refresh} (adaptive triggers, a periodic refresh) so that it finds a promoted replica after a
     * failover; a held lock whose key did not reach that replica is reported to its holder as
     * {@link LockLostException} at the next renewal.
     */
    public static ReactiveRedisLock create(RedisClusterClient client, LockOptions options) {
        return connected(RedisConnections.open(client), options);
    }

    /** Uses the caller's Cluster connection, which it never closes. Waiters poll with backoff. */
    public static ReactiveRedisLock create(StatefulRedisClusterConnection<String, String> connection,
            LockOptions options) {
        Objects.requireNonNull(connection, "connection");
        return new ReactiveRedisLock(options, new ScriptExecutor(connection.async()), null,
                () -> CompletableFuture.completedFuture(null));
    }

    /**
     * How many leases this lock is keeping alive right now: bodies running with their renewal
     * watchdog. For metrics and tests; zero once every {@code withLock} has ended.
     */
    public int activeLeases() {
        return core.activeLeases();
    }

    /** The options this lock was created with. */
    public LockOptions options() {
        return options;
    }

    @Override
    public <T> Mono<T> withLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
        return core.withLock(name, ttl, body);
    }

    @Override
    public ReactiveLock withAcquireTimeout(Duration acquireTimeout) {
        return core.withAcquireTimeout(acquireTimeout);
    }

    /**
     * Closes what this lock owns (the connection and client it created), without blocking.
     * Locks requested afterwards fail with {@link LockClosedException}; locks held stay until
     * released or expired.
     */
    public Mono<Void> closeAsync() {
        return Mono.defer(() -> core.close() ? Mono.fromCompletionStage(closeResources.get()).then() : Mono.empty());
    }

    /** Blocking {@link #closeAsync()}, for shutdown code. */
    @Override
    public void close() {
        closeAsync().block();
    }

    /** How many acquisitions in this process wait for a release notice of lock {@code name}; for tests. */
    int localWaiters(String name) {
        return store.localWaiters(name);
    }

    /** How many lock names have releases retried in the background; for tests. */
    int namesReleasingInBackground() {
        return core.namesReleasingInBackground();
    }

    /** How many timers wait to retry background releases; for tests. */
    int releaseRetryTimers() {
        return core.releaseRetryTimers();
    }

    @Override
    public String toString() {
        return "ReactiveRedisLock{" + options + "}";
    }
}
