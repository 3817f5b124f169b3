package io.reactivelock.redis;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.reactivelock.LockClosedException;
import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.Primitive;
import io.reactivelock.ReactiveLock;
import io.reactivelock.ReactiveLockClient;
import io.reactivelock.ReactiveMultiLock;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.ReactiveSemaphore;
import io.reactivelock.inspect.LockInspector;
import io.reactivelock.spi.LockCore;
import io.reactivelock.spi.Primitives;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import io.reactivelock.spi.LockStore;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The {@link ReactiveLockClient} of one Redis deployment (a standalone server, a Sentinel-managed
 * master given by a Sentinel {@link RedisURI}, or a Cluster): a {@link ReactiveLock} itself, and the
 * source of every other primitive on the same deployment. One per application and deployment; everything it hands
 * out shares its two connections (commands, and pub/sub for release notices).
 *
 * <pre>{@code
 * ReactiveRedisLock redis = ReactiveRedisLock.create(RedisURI.create("redis://localhost:6379"));
 * Mono<Receipt> receipt = redis.withLock("order:" + id, Duration.ofSeconds(10), lease -> pay(id));
 *
 * ReactiveSemaphore exports = redis.semaphore(4);        // at most 4 permits per name
 * ReactiveReadWriteLock catalog = redis.readWriteLock();
 * ReactiveMultiLock accounts = redis.multiLock();
 * ReactiveLock queue = redis.fair();                     // waiters served in arrival order
 * }</pre>
 *
 * <p>Protocol: acquire is {@code SET key token NX PX ttl}, in one Lua script with a fencing token
 * when the body sees the lease (on its own, the first try of a {@code withLock(name, ttl, Mono)});
 * release and renewal are Lua compare-and-act scripts on the token, run by {@code EVALSHA}.
 * The keys of one name share a Cluster hash slot, and the primitives of one name know each other:
 * a lock, a fair lock and a multi-lock on a name exclude each other. Thread-safe. It starts no
 * threads of its own: timers run on {@link LockOptions#scheduler()} and replies arrive on
 * Lettuce's event loops.
 *
 * <p>A client made from a {@link RedisURI} owns its Lettuce client and connections and closes
 * them in {@link #closeAsync()}; one made from the caller's Lettuce client closes only the
 * connections it opened.
 */
public final class ReactiveRedisLock implements ReactiveLockClient, AutoCloseable {

    private final LockOptions options;
    private final RedisConnections connections;
    private final @Nullable ReplicaAcks acks;
    private final ReleaseNotices notices;
    private final RedisStore store;
    private final FairRedisStore fairStore;
    private final LockCore<RedisStore.Call> core;
    private final LockCore<RedisStore.Call> fairCore;
    private final PrimitiveStore primitives;
    private final LockCore<PrimitiveStore.Call> semaphoreCore;
    private final LockCore<PrimitiveStore.Call> readWriteCore;
    private final MultiLockStore multiStore;
    private final LockCore<MultiLockStore.Call> multiCore;
    private final List<LockCore<?>> cores;
    private final AtomicBoolean closed = new AtomicBoolean();

    private ReactiveRedisLock(LockOptions options, RedisConnections connections) {
        this.options = options;
        this.connections = connections;
        this.acks = acks(options, connections);
        this.notices = new ReleaseNotices(connections.pubSub(), options.maxBackoff());
        StoreContext redis = StoreContext.of(options, connections.commands(), acks, notices);
        this.store = new RedisStore(redis);
        this.core = new LockCore<>(options, Primitive.LOCK, acknowledged(store));
        this.fairStore = new FairRedisStore(redis);
        this.fairCore = new LockCore<>(options, Primitive.LOCK, acknowledged(fairStore));
        this.primitives = new PrimitiveStore(redis);
        this.semaphoreCore = new LockCore<>(options, Primitive.SEMAPHORE, acknowledged(primitives));
        this.readWriteCore = new LockCore<>(options, Primitive.READ_WRITE_LOCK, acknowledged(primitives));
        this.multiStore = new MultiLockStore(redis,
                connections.cluster() ? SlotHash::getSlot : key -> 0);
        this.multiCore = new LockCore<>(options, Primitive.MULTI_LOCK, acknowledged(multiStore));
        this.cores = List.of(core, fairCore, semaphoreCore, readWriteCore, multiCore);
    }

    /**
     * The acknowledgements {@link LockOptions#replicaAcknowledgement()} and
     * {@link LockOptions#durableGrants()} ask for, on connections of their own: the master's, or
     * each master's of a Cluster. Closes {@code connections} if they cannot be had.
     */
    private static @Nullable ReplicaAcks acks(LockOptions options, RedisConnections connections) {
        try {
            return connections.client() instanceof RedisClusterClient cluster
                    ? ClusterAcks.open(cluster, options)
                    : MasterAcks.open((RedisClient) connections.client(), options);
        } catch (RuntimeException e) {
            connections.close().get();
            throw e;
        }
    }

    /** {@code store}, whose grants the replicas acknowledge when {@link #acks} are on. */
    private <C> LockStore<C> acknowledged(LockStore<C> store) {
        ReplicaAcks a = acks;
        return a == null ? store : new AcknowledgedStore<>(store, a);
    }

    /** Connects to {@code uri} with the default options; see {@link #create(RedisURI, LockOptions)}. */
    public static ReactiveRedisLock create(RedisURI uri) {
        return create(uri, LockOptions.defaults());
    }

    /**
     * Creates a Lettuce client for {@code uri} (standalone, or Sentinel with a Sentinel URI) and the
     * two connections, all owned by this client. Connecting blocks: call it at start-up, not on a
     * reactive thread. The Lettuce client rejects commands while disconnected, so an attempt made
     * during an outage fails fast and is retried with backoff instead of being buffered and
     * replayed after its caller gave up, and its connections consolidate flushes
     * ({@link ConsolidatedFlushes}).
     *
     * @throws io.lettuce.core.RedisConnectionException if Redis cannot be reached
     */
    public static ReactiveRedisLock create(RedisURI uri, LockOptions options) {
        Objects.requireNonNull(options, "options");
        return new ReactiveRedisLock(options, RedisConnections.open(uri));
    }

    /**
     * Opens the two connections from the caller's Lettuce client, which must have a default
     * {@link RedisURI}, and shares its event loops. This client closes the connections, not the
     * Lettuce client. Connecting blocks: call it at start-up. Give the Lettuce client
     * {@code DisconnectedBehavior.REJECT_COMMANDS}, as {@link #create(RedisURI, LockOptions)} does, so
     * that attempts fail fast during an outage instead of being buffered and replayed on reconnect,
     * and resources with {@link ConsolidatedFlushes}.
     */
    public static ReactiveRedisLock create(RedisClient client, LockOptions options) {
        Objects.requireNonNull(options, "options");
        return new ReactiveRedisLock(options, RedisConnections.open(client));
    }

    /**
     * Opens the two Cluster connections (commands, routed by hash slot, and pub/sub) from the
     * caller's Lettuce client; this client closes the connections, not the Lettuce client. A
     * release notice reaches a subscriber on any node. Connecting blocks: call it at start-up.
     *
     * <p>Give the Lettuce client {@link io.lettuce.core.cluster.ClusterTopologyRefreshOptions
     * topology refresh} (adaptive triggers, a periodic refresh) so that it finds a promoted replica
     * after a failover; a held lock whose key did not reach that replica is reported to its holder
     * as {@link LockLostException} at the next renewal.
     */
    public static ReactiveRedisLock create(RedisClusterClient client, LockOptions options) {
        Objects.requireNonNull(options, "options");
        return new ReactiveRedisLock(options, RedisConnections.open(client));
    }

    @Override
    public <T> Mono<T> withLock(String name, Duration ttl, Mono<T> body) {
        return core.withLock(name, ttl, options.acquireTimeout(), body);
    }

    @Override
    public <T> Mono<T> withLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
        return core.withLock(name, ttl, body);
    }

    @Override
    public <T> Flux<T> withLockMany(String name, Duration ttl, Function<? super LockLease, ? extends Publisher<T>> body) {
        return core.withLockMany(name, ttl, options.acquireTimeout(), body);
    }

    @Override
    public ReactiveLock withAcquireTimeout(Duration acquireTimeout) {
        return core.withAcquireTimeout(acquireTimeout);
    }

    /**
     * The fair lock of this deployment: waiters queue in Redis and get the lock in arrival order,
     * across processes; a release hands the lock straight to the first live waiter (in-process,
     * without a notice, when that waiter is in the releaser's process). A waiter that crashes costs
     * the line up to one {@link LockOptions#waiterLease()} plus one backoff step; one that is
     * cancelled leaves at once. Same keys as this lock, so the two exclude each other, but use one
     * mode per name: a non-fair acquisition ignores the line. (Without fair mode, waiters in one
     * process still get the lock in arrival order by in-process hand-off, while waiters in other
     * processes compete for it.)
     */
    @Override
    public ReactiveLock fair() {
        return fairCore.withAcquireTimeout(options.acquireTimeout());
    }

    /**
     * A semaphore of {@code capacity} permits per name, on this deployment. Its holders of a name
     * are one sorted set scored by the server time at which each holder's lease ends; a release
     * wakes a waiter of this process at once, the others poll with backoff. Not fair.
     *
     * @throws IllegalArgumentException if {@code capacity} is below 1
     */
    @Override
    public ReactiveSemaphore semaphore(int capacity) {
        return Primitives.semaphore(semaphoreCore, capacity, primitives::permits);
    }

    /**
     * The read-write lock of this deployment. Its writer is a key holding its token, as this lock's;
     * its readers are a sorted set of tokens scored by the server time at which each reader's lease
     * ends, so readers expire one by one; waiting writers are a sorted set of the same kind.
     */
    @Override
    public ReactiveReadWriteLock readWriteLock() {
        return Primitives.readWriteLock(readWriteCore, primitives::readWrite);
    }

    /**
     * The multi-lock of this deployment: its names are this lock's, so a {@code withLocks} and a
     * {@code withLock} on one name exclude each other. On a standalone server or Sentinel master one
     * script takes every name or none. On a Cluster a script runs on one node, so the names are
     * taken one hash slot at a time in ascending order, releasing the slots already taken when a
     * later one is busy: the body still runs only with every name held, but during an attempt the
     * caller briefly holds the names of the earlier slots without the others.
     */
    @Override
    public ReactiveMultiLock multiLock() {
        return Primitives.multiLock(multiCore, multiStore::open, (call, lease) -> multiStore.fencingTokens(call));
    }

    /**
     * A read-only inspector of this deployment's locks, on this client's command connection; see
     * {@link LockInspector#withForceReleaseEnabled()} for the one administrative operation.
     */
    public LockInspector inspector() {
        return new RedisLockInspector(options, connections.deployment(), false);
    }

    /** The options every primitive of this client runs with. */
    public LockOptions options() {
        return options;
    }

    /**
     * How many leases this client is keeping alive right now, all primitives together: bodies
     * running with their renewal watchdog. For metrics and tests; zero once every body has ended.
     */
    public int activeLeases() {
        return cores.stream().mapToInt(LockCore::activeLeases).sum();
    }

    /**
     * Releases what this client holds, then closes what it owns (the connections, and the Lettuce
     * client if it created it), without blocking. Acquisitions requested afterwards, of any
     * primitive, fail with {@link LockClosedException}, and so do those still waiting; bodies
     * running are cancelled, their subscribers getting a {@link LockLostException}, and their
     * locks are released by token, as is a grant whose reply is still on its way. The connections
     * close once those releases are answered, or after {@link LockOptions#closeTimeout()}; a name
     * whose release was not answered by then is logged at WARN and stays until its TTL.
     */
    @Override
    public Mono<Void> closeAsync() {
        return Mono.defer(() -> {
            if (!closed.compareAndSet(false, true)) {
                return Mono.empty();
            }
            cores.forEach(LockCore::close);
            // Bodies cancelled and their locks released (releases go on the command connection) before
            // the grants' connection and then the command connection close.
            ReplicaAcks a = acks;
            return Mono.when(cores.stream().map(LockCore::released).toList())
                    .then(Mono.fromCompletionStage(() -> a == null ? connections.close().get()
                            : a.closeAsync().thenCompose(done -> connections.close().get())))
                    .then();
        });
    }

    /** Blocking {@link #closeAsync()}, for shutdown code. */
    @Override
    public void close() {
        closeAsync().block();
    }

    /**
     * Closes the connections without closing the locks first, so that nothing is released or
     * renewed, as when the process dies; for tests ({@link #close()} releases what is held).
     */
    CompletionStage<?> crash() {
        ReplicaAcks a = acks;
        return a == null ? connections.close().get() : a.closeAsync().thenCompose(done -> connections.close().get());
    }

    /** How many acquisitions in this process wait for a release notice of lock {@code name}; for tests. */
    int localWaiters(String name) {
        return store.localWaiters(name);
    }

    /** How many readers and writers of this client wait for {@code name} now; for tests. */
    int readWriteWaiters(String name) {
        return primitives.readWriteWaiters(name);
    }

    /** How many lock names have releases retried in the background; for tests. */
    int namesReleasingInBackground() {
        return core.namesReleasingInBackground();
    }

    /** How many timers wait to retry background releases; for tests. */
    int releaseRetryTimers() {
        return core.releaseRetryTimers();
    }

    /**
     * What this client keeps in memory for lock names, every primitive together: the release
     * channels it keeps state for ({@code channels}), the names with a plain {@code SET NX PX} on
     * its way ({@code settingNow}), the names with releases retried in the background
     * ({@code backgroundReleases}) and the timers of those retries ({@code releaseRetryTimers}),
     * and the delayed tasks waiting in the primitives' timer queues ({@code timers}). All zero once
     * every acquisition has ended and the linger passed; for tests.
     */
    Map<String, Integer> stateKept() {
        return Map.of("channels", notices.channels(),
                "settingNow", store.settingNow(),
                "backgroundReleases", cores.stream().mapToInt(LockCore::namesReleasingInBackground).sum(),
                "releaseRetryTimers", cores.stream().mapToInt(LockCore::releaseRetryTimers).sum(),
                "timers", cores.stream().mapToInt(LockCore::pendingTimers).sum());
    }

    @Override
    public String toString() {
        return "ReactiveRedisLock{" + (connections.cluster() ? "cluster, " : "") + options + "}";
    }
}
