package io.reactivelock.redis;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode.NodeFlag;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.LockOptions;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * Replica-acknowledged writes on a Cluster: each master's grants go through {@link MasterAcks} of
 * their own, on that master's node connection of a Cluster connection kept for grants. A
 * {@code WAIT} answers only for the writes sent before it on its connection, so a grant's script
 * goes to its slot's master on that node connection, not routed by Lettuce, and its {@code WAIT}
 * follows it there; and it blocks that connection, so it never runs on the shared one.
 *
 * <p>A master's acknowledgements are set up at its first grant ({@code INFO replication} on its
 * node connection), so a replica promoted by a failover gets its own; a master without replicas
 * counts them again at each group of grants (one may attach: its old master, back as its replica).
 * A script sent to a node that no longer serves its slot is answered {@code MOVED} (or {@code ASK}
 * while the slot migrates), and a slot with no master in the client's view (during a failover)
 * fails the grant: the client's view of the Cluster is refreshed, and the error is transient
 * ({@link RedisErrors}), so the attempt is made again. A Cluster with no replica at all when the
 * client is created gets no acknowledgements, as a standalone master without replicas.
 */
final class ClusterAcks implements ReplicaAcks {

    private final RedisClusterClient client;
    private final StatefulRedisClusterConnection<String, String> grants;
    private final LockOptions options;
    /** Each master's acknowledgements, by node id and address. */
    private final ConcurrentHashMap<String, CompletableFuture<MasterAcks>> masters = new ConcurrentHashMap<>();
    /** Whether a refresh of the client's view of the Cluster is under way, so that a burst of {@code MOVED}s asks for one. */
    private final AtomicBoolean refreshing = new AtomicBoolean();
    private volatile boolean closed;

    private ClusterAcks(RedisClusterClient client, StatefulRedisClusterConnection<String, String> grants, LockOptions options) {
        this.client = client;
        this.grants = grants;
        this.options = options;
    }

    /**
     * The acknowledgements {@code options} ask for on the Cluster {@code client} reaches, or
     * {@code null} when none are asked for (off, or every replica when the Cluster has none,
     * without durable grants). Connects, and sets up the acknowledgements of every master that
     * serves slots and is not failing: blocks. A master it cannot reach now is set up at its first
     * grant.
     *
     * @throws IllegalStateException as {@link MasterAcks#open} throws it, for any master
     */
    static @Nullable ClusterAcks open(RedisClusterClient client, LockOptions options) {
        boolean anyReplica = client.getPartitions().stream().anyMatch(node -> node.is(NodeFlag.REPLICA));
        if (options.replicaAcknowledgement() == 0 && !options.durableGrants()
                || options.replicaAcknowledgement() == LockOptions.ALL_REPLICAS && !anyReplica && !options.durableGrants()) {
            return null;
        }
        StatefulRedisClusterConnection<String, String> grants = client.connect(StringCodec.UTF8);
        ClusterAcks acks = new ClusterAcks(client, grants, options);
        try {
            for (RedisClusterNode master : grants.getPartitions()) {
                if (serving(master)) {
                    try {
                        MasterAcks.join(acks.of(master));
                    } catch (RuntimeException e) {
                        if (e instanceof IllegalStateException || e instanceof RedisCommandExecutionException) {
                            throw e; // what the master answered: durable grants it cannot make, say
                        }
                        // Not reached in time: set up at its first grant.
                    }
                }
            }
            return acks;
        } catch (RuntimeException e) {
            acks.closeAsync();
            throw e;
        }
    }

    /** Whether {@code node} is a master that serves slots and is not failing. */
    private static boolean serving(RedisClusterNode node) {
        return node.is(NodeFlag.UPSTREAM) && !node.getSlots().isEmpty() && !node.is(NodeFlag.FAIL) && !node.is(NodeFlag.EVENTUAL_FAIL)
                && !node.is(NodeFlag.NOADDR);
    }

    @Override
    public CompletionStage<Long> run(LuaScript script, Predicate<Long> wrote, String[] keys, String... args) {
        return on(keys[0], acks -> acks.run(script, wrote, keys, args));
    }

    @Override
    public CompletionStage<Boolean> setIfAbsent(String key, String value, long ttlMillis) {
        return on(key, acks -> acks.setIfAbsent(key, value, ttlMillis));
    }

    /** {@code acknowledged} by the acknowledgements of {@code key}'s master. */
    private <T> CompletionStage<T> on(String key, Function<MasterAcks, CompletionStage<T>> acknowledged) {
        int slot = SlotHash.getSlot(key);
        RedisClusterNode master = grants.getPartitions().getMasterBySlot(slot);
        if (master == null) {
            refresh();
            return CompletableFuture.failedFuture(new RedisException("no master serves slot " + slot
                    + " in the client's view of the Cluster (a failover under way?): the grant was not sent"));
        }
        return of(master).thenCompose(acknowledged).whenComplete((value, error) -> {
            if (error != null && RedisErrors.isRedirect(error)) {
                refresh(); // the slot moved (a failover, a migration): the next attempt goes where it is now
            }
        });
    }

    private void refresh() {
        if (refreshing.compareAndSet(false, true)) {
            client.refreshPartitionsAsync().whenComplete((done, error) -> refreshing.set(false));
        }
    }

    /**
     * The acknowledgements of {@code master}, set up at its first use (within the command timeout);
     * a failed set-up is tried again at the next. Kept by node id and address, so that a master that
     * moved to another address (a restarted pod) gets a connection there.
     */
    private CompletableFuture<MasterAcks> of(RedisClusterNode master) {
        String host = master.getUri().getHost();
        int port = master.getUri().getPort();
        String id = master.getNodeId() + "@" + host + ":" + port;
        boolean[] created = new boolean[1];
        CompletableFuture<MasterAcks> acks = masters.computeIfAbsent(id, key -> {
            created[0] = true;
            return grants.getConnectionAsync(host, port)
                    .thenCompose(node -> MasterAcks.on(client, node, true, options))
                    .thenApply(Objects::requireNonNull) // a Cluster's master always gets them
                    .toCompletableFuture()
                    .orTimeout(options.commandTimeout().toMillis(), TimeUnit.MILLISECONDS);
        });
        if (created[0]) { // once per set-up, not per grant; outside computeIfAbsent, which it may update
            acks.whenComplete((set, error) -> {
                if (error != null) {
                    masters.remove(id, acks);
                } else if (closed) {
                    set.closeAsync(); // set up while the client closed: its listener goes too
                }
            });
        }
        return acks;
    }

    @Override
    public boolean waiting() {
        return masters.values().stream().map(ClusterAcks::setUp).anyMatch(acks -> acks != null && acks.waiting());
    }

    @Override
    public String describe() {
        return "ClusterAcks{" + masters.values().stream().map(ClusterAcks::setUp).filter(Objects::nonNull)
                .map(MasterAcks::describe).toList() + "}";
    }

    /** A master's acknowledgements if set up by now, else {@code null}; never waits. */
    private static @Nullable MasterAcks setUp(CompletableFuture<MasterAcks> acks) {
        return acks.isDone() && !acks.isCompletedExceptionally() ? acks.getNow(null) : null;
    }

    /**
     * Stops the acknowledgements of every master set up (one still being set up stops once it is),
     * then closes the grants' Cluster connection, and their node connections with it.
     */
    @Override
    public CompletionStage<Void> closeAsync() {
        closed = true;
        masters.values().forEach(acks -> acks.thenAccept(MasterAcks::closeAsync));
        return grants.closeAsync();
    }

    @Override
    public String toString() {
        return describe();
    }
}
