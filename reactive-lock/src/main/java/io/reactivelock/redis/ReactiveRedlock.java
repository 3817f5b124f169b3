package io.reactivelock.redis;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.resource.ClientResources;
import io.reactivelock.Primitive;
import io.reactivelock.LockLease;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.spi.LockCore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import io.reactivelock.LeaderElection;
import reactor.core.scheduler.Schedulers;

/**
 * A {@link ReactiveLock} over N independent Redis masters (the Redlock algorithm): a lock is held
 * while a majority of the masters hold it, so it survives the loss of up to (N - 1) / 2 of them.
 *
 * <pre>{@code
 * ReactiveRedlock locks = ReactiveRedlock.create(
 *         List.of(RedisURI.create("redis://a:6379"), RedisURI.create("redis://b:6379"), RedisURI.create("redis://c:6379")),
 *         LockOptions.defaults());
 * Mono<Receipt> receipt = locks.withLock("order:" + id, Duration.ofSeconds(10), pay(id));
 * }</pre>
 *
 * <p>Each attempt sends the single lock's acquire script to every node at once, with one token,
 * and waits at most {@linkplain RedlockOptions#nodeTimeout() the node timeout} for each reply. It
 * succeeds when a majority (N / 2 + 1) granted the lock and time is left of the lease: validity =
 * ttl - elapsed - drift, with drift = ttl x {@linkplain RedlockOptions#clockDriftFactor() clock
 * drift factor} + 2 ms, measured with {@link System#nanoTime()} from before the first command. A
 * failed attempt is released on every node (also on those that failed or did not answer) and
 * retried after a jittered backoff until the acquire timeout. Renewal extends the lease on every
 * node and needs a majority. Release deletes it on every node, and {@code withLock} signals the
 * body's outcome once a majority answered the release (the lock can be taken again then; the
 * other nodes' releases are still delivered). {@code withLock} otherwise keeps the
 * {@linkplain ReactiveLock contract} of the single lock.
 *
 * <p><b>The lock only.</b> It runs the lock and, on it, {@link #leaderElection()}. A semaphore, a
 * read-write lock, a multi-lock or a fair line would each need a quorum protocol of its own (a
 * majority of holders' sets, of lines), which this library does not have: use a
 * {@link ReactiveRedisLock} client for them.
 *
 * <p><b>No fencing token.</b> {@link LockLease#fencingToken()} throws
 * {@link UnsupportedOperationException}: the nodes' counters follow their own clocks, so the
 * largest one in a majority is not guaranteed to grow from one holder to the next, and a counter
 * that a restarted node forgets cannot be proved monotonic either. Use the single
 * {@link io.reactivelock.redis.ReactiveRedisLock} where a resource must reject stale holders.
 *
 * <p><b>Restarts.</b> Redis without fsync on every write forgets locks when it restarts; a node
 * restarted empty must stay down for at least the longest TTL in use, or two holders may each
 * count it in their majority.
 *
 * <p>Thread-safe; starts no threads: timers run on {@link LockOptions#scheduler()}, replies arrive
 * on Lettuce's event loops. Owns its client, its client's resources (with {@link ConsolidatedFlushes})
 * and its connections, and closes them in {@link #closeAsync()}.
 */
public final class ReactiveRedlock implements ReactiveLock, AutoCloseable {

    private final LockOptions options;
    private final RedlockOptions redlock;
    private final RedlockStore store;
    private final LockCore<RedlockStore.Call> core;
    private final RedisClient client;
    private final List<StatefulRedisConnection<String, String>> connections;

    private ReactiveRedlock(List<StatefulRedisConnection<String, String>> connections,
            RedisClient client, LockOptions options, RedlockOptions redlock) {
        this.options = options;
        this.redlock = redlock;
        this.store = new RedlockStore(connections.stream().map(c -> new LockCommands(c.async())).toList(), options, redlock);
        this.core = new LockCore<>(options, Primitive.LOCK, store);
        this.client = client;
        this.connections = List.copyOf(connections);
    }

    /** Connects to {@code nodes} with the default {@link RedlockOptions}; see {@link #create(List, LockOptions, RedlockOptions)}. */
    public static ReactiveRedlock create(List<RedisURI> nodes, LockOptions options) {
        return create(nodes, options, RedlockOptions.defaults());
    }

    /**
     * Connects to every node, each an independent master (no replica of another). Connecting
     * blocks and needs every node up: call it at start-up, not on a reactive thread. Afterwards a
     * node that goes down only counts against the majority; commands to it fail fast while it is
     * disconnected, and its connection comes back by itself.
     *
     * @throws IllegalArgumentException if there are fewer than 3 nodes, an even number of them, or
     *     the same server twice (same host, case-insensitive, and port; or same socket)
     * @throws io.lettuce.core.RedisConnectionException if a node cannot be reached
     */
    public static ReactiveRedlock create(List<RedisURI> nodes, LockOptions options, RedlockOptions redlock) {
        checkNodes(nodes);
        Objects.requireNonNull(options, "options");
        Objects.requireNonNull(redlock, "redlock");
        // Resources of its own, so that its connections consolidate flushes as the single lock's do.
        ClientResources resources = ClientResources.builder().nettyCustomizer(new ConsolidatedFlushes()).build();
        RedisClient client = RedisClient.create(resources);
        client.setOptions(ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .build());
        List<StatefulRedisConnection<String, String>> connections = new ArrayList<>(nodes.size());
        try {
            for (RedisURI uri : nodes) {
                connections.add(client.connect(StringCodec.UTF8, uri));
            }
        } catch (RuntimeException e) {
            connections.forEach(StatefulRedisConnection::closeAsync);
            client.shutdownAsync().thenCompose(done -> RedisConnections.shutdown(resources));
            throw e;
        }
        return new ReactiveRedlock(connections, client, options, redlock);
    }

    private static void checkNodes(List<RedisURI> nodes) {
        Objects.requireNonNull(nodes, "nodes");
        if (nodes.size() < 3) {
            throw new IllegalArgumentException("Redlock needs at least 3 nodes, got " + nodes.size());
        }
        if (nodes.size() % 2 == 0) {
            throw new IllegalArgumentException("Redlock needs an odd number of nodes (one more node than an odd "
                    + "number tolerates no more failures), got " + nodes.size());
        }
        Set<String> seen = new HashSet<>();
        for (RedisURI uri : nodes) {
            Objects.requireNonNull(uri, "nodes must not contain null");
            String id = identity(uri);
            if (!seen.add(id)) {
                throw new IllegalArgumentException("Redlock nodes must be distinct servers, but " + id + " is given twice");
            }
        }
    }

    /** The server a URI reaches, for duplicate checks and messages. */
    private static String identity(RedisURI uri) {
        if (uri.getSocket() != null) {
            return uri.getSocket();
        }
        if (!uri.getSentinels().isEmpty()) {
            return "sentinel master " + uri.getSentinelMasterId() + " at " + uri.getSentinels().stream()
                    .map(ReactiveRedlock::identity).sorted().collect(Collectors.joining(","));
        }
        return String.valueOf(uri.getHost()).toLowerCase(Locale.ROOT) + ":" + uri.getPort();
    }

    /** The options this lock was created with. */
    public LockOptions options() {
        return options;
    }

    /** The Redlock settings this lock was created with. */
    public RedlockOptions redlockOptions() {
        return redlock;
    }

    /**
     * {@inheritDoc}
     *
     * <p>Besides the common checks, {@code ttl} must exceed the node timeout plus the drift
     * allowance, or no acquisition could ever be valid.
     */
    @Override
    public <T> Mono<T> withLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
        return core.withLock(name, ttl, body);
    }

    @Override
    public <T> Flux<T> withLockMany(String name, Duration ttl, Function<? super LockLease, ? extends Publisher<T>> body) {
        return core.withLockMany(name, ttl, options.acquireTimeout(), body);
    }

    /** Leader election on this lock; see {@link LeaderElection}. */
    public LeaderElection leaderElection() {
        return LeaderElection.of(this);
    }

    @Override
    public ReactiveLock withAcquireTimeout(Duration acquireTimeout) {
        return core.withAcquireTimeout(acquireTimeout);
    }

    /**
     * How many leases this lock is keeping alive right now: bodies running with their renewal
     * watchdog. For metrics and tests; zero once every {@code withLock} has ended.
     */
    public int activeLeases() {
        return core.activeLeases();
    }

    /**
     * Releases what this lock holds, then closes the connections and the client, without
     * blocking. Locks requested afterwards fail with {@link io.reactivelock.LockClosedException},
     * and so do acquisitions still waiting; bodies running are cancelled, their subscribers getting
     * a {@link io.reactivelock.LockLostException}, and their locks are released on every node, as
     * is a grant whose replies are still on their way. The connections close once every node
     * answered those releases, or after {@link LockOptions#closeTimeout()} (then at most the node
     * timeout more for the nodes still answering); a name whose release no majority answered by
     * then is logged at WARN and stays until its TTL.
     */
    public Mono<Void> closeAsync() {
        return Mono.defer(() -> {
            if (!core.close()) {
                return Mono.empty();
            }
            // The connections finish closing on the client's event loop; shutting the client down
            // from there would block that loop, so hop off it first.
            return core.released().then(store.answered()).then(Mono.fromCompletionStage(() -> CompletableFuture
                    .allOf(connections.stream().map(StatefulRedisConnection::closeAsync).toArray(CompletableFuture[]::new))
                    .thenComposeAsync(done -> client.shutdownAsync(), task -> Schedulers.boundedElastic().schedule(task))
                    .thenCompose(done -> RedisConnections.shutdown(client.getResources())))
                    .then());
        });
    }

    /** Blocking {@link #closeAsync()}, for shutdown code. */
    @Override
    public void close() {
        closeAsync().block();
    }

    @Override
    public String toString() {
        return "ReactiveRedlock{" + connections.size() + " nodes, " + redlock + ", " + options + "}";
    }
}
