package io.reactivelock;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.reactivelock.internal.LockCore;
import io.reactivelock.internal.ReleaseNotices;
import io.reactivelock.internal.MultiLocks;
import java.time.Duration;
import java.util.Collection;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.ToIntFunction;
import reactor.core.publisher.Mono;

/**
 * A {@link ReactiveMultiLock} on one Redis deployment reached through Lettuce: a standalone
 * server, a Sentinel-managed master or a Cluster. Its names are the locks of
 * {@link ReactiveRedisLock} with the same key prefix, so the two exclude each other per name.
 *
 * <pre>{@code
 * ReactiveRedisMultiLock locks = ReactiveRedisMultiLock.create(RedisURI.create("redis://localhost:6379"));
 * // Both accounts, or neither: a transfer the other way round waits instead of deadlocking.
 * Mono<Receipt> receipt = locks.withLocks(List.of("account:" + from, "account:" + to), Duration.ofSeconds(10),
 *         lease -> ledger.transfer(from, to, amount,
 *                 lease.fencingToken("account:" + from), lease.fencingToken("account:" + to)));
 * }</pre>
 *
 * <p>Protocol: on a standalone server (or a Sentinel master) one Lua script takes every name or
 * none ({@code SET} of each lock key, after checking that none is held by another token, and one
 * fencing token written to every name's record), one renews them all, one releases them all and
 * wakes the oldest sleeper of each name, as the single lock's release does.
 *
 * <p><b>Cluster.</b> A script runs on one node, so the names are taken one hash slot at a time:
 * the names of one slot in one script, the slots in ascending order. If the names of a slot are
 * busy, the slots already taken are released before the caller waits. The body still runs only
 * with every name held, but during an attempt the caller holds the names of the earlier slots
 * without the others (for the round trips of the attempt, plus a command timeout when a node does
 * not answer): a {@code withLock} on one of them meanwhile finds it busy, and a process that dies
 * in that window leaves those names locked until their TTL. Lock names are their own hash tags,
 * so two names share a slot only by chance. Renewal renews each slot's names in one script and
 * loses the lease if any name is lost; each slot's names get one fencing token.
 *
 * <p>Of the options, {@code fair} is ignored: a multi-lock is not fair, and it does not queue in
 * the line of a fair {@link ReactiveRedisLock} (they still exclude each other). The others apply
 * as for {@link ReactiveRedisLock}. Thread-safe; one instance serves the whole application and
 * closes what it created in {@link #closeAsync()}.
 */
public final class ReactiveRedisMultiLock implements ReactiveMultiLock, AutoCloseable {

    private final LockOptions options;
    private final MultiLockStore store;
    private final LockCore<MultiLockStore.Call> core;
    private final RedisConnections connections;

    private ReactiveRedisMultiLock(LockOptions options, RedisConnections connections, ToIntFunction<String> slot) {
        this.options = options;
        this.connections = connections;
        this.store = new MultiLockStore(options, connections.scripts(), new ReleaseNotices<>(connections.pubSub(), options.maxBackoff()), slot);
        this.core = new LockCore<>(options, Primitive.MULTI_LOCK, store);
    }

    /** Connects to {@code uri} with the default options; see {@link #create(RedisURI, LockOptions)}. */
    public static ReactiveRedisMultiLock create(RedisURI uri) {
        return create(uri, LockOptions.defaults());
    }

    /**
     * Creates a client for {@code uri} (standalone or Sentinel) and the two connections the lock
     * needs (commands, and pub/sub for release notices), all owned by it; as
     * {@link ReactiveRedisLock#create(RedisURI, LockOptions)}, the client rejects commands while
     * disconnected. Connecting blocks: call it at start-up.
     *
     * @throws io.lettuce.core.RedisConnectionException if Redis cannot be reached
     */
    public static ReactiveRedisMultiLock create(RedisURI uri, LockOptions options) {
        Objects.requireNonNull(options, "options");
        return new ReactiveRedisMultiLock(options, RedisConnections.open(uri), key -> 0);
    }

    /**
     * Opens the two connections from the caller's client, which must have a default
     * {@link RedisURI}; the lock closes its connections, not the client. Connecting blocks.
     */
    public static ReactiveRedisMultiLock create(RedisClient client, LockOptions options) {
        Objects.requireNonNull(options, "options");
        return new ReactiveRedisMultiLock(options, RedisConnections.open(client), key -> 0);
    }

    /**
     * Opens a Cluster connection and a Cluster pub/sub connection from the caller's client; the
     * lock closes its connections, not the client. Turn on the client's topology refresh, as for
     * {@link ReactiveRedisLock#create(RedisClusterClient, LockOptions)}. Connecting blocks.
     */
    public static ReactiveRedisMultiLock create(RedisClusterClient client, LockOptions options) {
        Objects.requireNonNull(options, "options");
        return new ReactiveRedisMultiLock(options, RedisConnections.open(client), SlotHash::getSlot);
    }

    @Override
    public <T> Mono<T> withLocks(Collection<String> names, Duration ttl,
            Function<? super MultiLockLease, ? extends Mono<T>> body) {
        return MultiLocks.withLocks(core, names, ttl, store::open, (call, lease) -> store.fencingTokens(call), body);
    }

    /** Bodies running with their renewal watchdog now; zero once every {@code withLocks} has ended. */
    public int activeLeases() {
        return core.activeLeases();
    }

    /** The options this lock was created with. */
    public LockOptions options() {
        return options;
    }

    /**
     * Closes the connections (and the client, if this lock created it), without blocking. Later
     * acquisitions fail with {@link LockClosedException}; locks held stay until released or expired.
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
        return "ReactiveRedisMultiLock{" + options + "}";
    }
}
