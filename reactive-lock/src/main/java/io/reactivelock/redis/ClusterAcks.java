package io.reactivelock.redis;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.LockOptions;
import io.reactivelock.spi.LockCore;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;
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
 * waits for nothing (its grants go on the shared connection), as a standalone master does. A
 * script sent to a node that no longer serves its slot is answered {@code MOVED}: the client's view
 * of the Cluster is refreshed, and the error is transient ({@link RedisErrors}), so the attempt is
 * made again on the slot's new master.
 */
final class ClusterAcks implements ReplicaAcks {

    private final RedisClusterClient client;
    private final StatefulRedisClusterConnection<String, String> grants;
    /** The shared, routed commands: grants on masters that have no replica to wait for. */
    private final LockCommands shared;
    private final LockOptions options;
    /** Each master's acknowledgements by node id, {@code null} inside for a master with nothing to wait for. */
    private final ConcurrentHashMap<String, CompletableFuture<@Nullable MasterAcks>> masters = new ConcurrentHashMap<>();

    private ClusterAcks(RedisClusterClient client, StatefulRedisClusterConnection<String, String> grants, LockCommands shared,
            LockOptions options) {
        this.client = client;
        this.grants = grants;
        this.shared = shared;
        this.options = options;
    }

    /**
     * The acknowledgements {@code options} ask for on the Cluster {@code client} reaches, or
     * {@code null} when none are asked for (off, or every replica when the Cluster has none,
     * without durable grants). Connects, and sets up every master's now: blocks.
     *
     * @throws IllegalStateException as {@link MasterAcks#open} throws it, for any master
     */
    static @Nullable ClusterAcks open(RedisClusterClient client, LockOptions options, LockCommands shared) {
        boolean anyReplica = client.getPartitions().stream().anyMatch(node -> node.is(RedisClusterNode.NodeFlag.REPLICA));
        if (options.replicaAcknowledgement() == 0 && !options.durableGrants()
                || options.replicaAcknowledgement() == LockOptions.ALL_REPLICAS && !anyReplica && !options.durableGrants()) {
            return null;
        }
        StatefulRedisClusterConnection<String, String> grants = client.connect(StringCodec.UTF8);
        ClusterAcks acks = new ClusterAcks(client, grants, shared, options);
        try {
            List<RedisClusterNode> upstream = grants.getPartitions().stream()
                    .filter(node -> node.is(RedisClusterNode.NodeFlag.UPSTREAM)).toList();
            CompletableFuture.allOf(upstream.stream().map(acks::of).toArray(CompletableFuture[]::new)).join();
            return acks;
        } catch (RuntimeException e) {
            acks.closeAsync();
            throw e instanceof CompletionException && e.getCause() instanceof RuntimeException cause ? cause : e;
        }
    }

    @Override
    public CompletionStage<Long> run(LuaScript script, Predicate<Long> wrote, String[] keys, String... args) {
        return on(keys[0], acks -> acks.run(script, wrote, keys, args), () -> shared.run(script, keys, args));
    }

    @Override
    public CompletionStage<Boolean> setIfAbsent(String key, String value, long ttlMillis) {
        return on(key, acks -> acks.setIfAbsent(key, value, ttlMillis), () -> shared.setIfAbsent(key, value, ttlMillis));
    }

    /** {@code acknowledged} by the acknowledgements of {@code key}'s master, or {@code plain} where it has none. */
    private <T> CompletionStage<T> on(String key, Function<MasterAcks, CompletionStage<T>> acknowledged,
            Supplier<CompletionStage<T>> plain) {
        RedisClusterNode master = grants.getPartitions().getMasterBySlot(SlotHash.getSlot(key));
        if (master == null) {
            return plain.get(); // no master known for the slot: routed, Lettuce finds one or fails
        }
        return of(master).thenCompose(acks -> acks == null ? plain.get() : acknowledged.apply(acks).whenComplete((value, error) -> {
            if (error != null && LockCore.unwrap(error) instanceof RedisCommandExecutionException e
                    && String.valueOf(e.getMessage()).startsWith("MOVED")) {
                client.refreshPartitionsAsync(); // a failover moved the slot: the next attempt goes to its new master
            }
        }));
    }

    /** The acknowledgements of {@code master}, set up at its first use; a failed set-up is tried again at the next. */
    private CompletableFuture<@Nullable MasterAcks> of(RedisClusterNode master) {
        CompletableFuture<@Nullable MasterAcks> acks = masters.computeIfAbsent(master.getNodeId(),
                id -> grants.getConnectionAsync(master.getUri().getHost(), master.getUri().getPort())
                        .thenCompose(node -> MasterAcks.on(client, node, false, options))
                        .toCompletableFuture());
        acks.whenComplete((set, error) -> {
            if (error != null) {
                masters.remove(master.getNodeId(), acks);
            }
        });
        return acks;
    }

    @Override
    public boolean waiting() {
        return masters.values().stream().anyMatch(acks -> acks.isDone() && !acks.isCompletedExceptionally()
                && acks.join() != null && acks.join().waiting());
    }

    @Override
    public String describe() {
        return "ClusterAcks{" + masters.values().stream().filter(acks -> acks.isDone() && !acks.isCompletedExceptionally()
                && acks.join() != null).map(acks -> acks.join().describe()).toList() + "}";
    }

    /** Stops every master's acknowledgements, then closes the grants' Cluster connection (their node connections with it). */
    @Override
    public CompletionStage<Void> closeAsync() {
        return CompletableFuture.allOf(masters.values().stream()
                        .map(acks -> acks.handle((set, error) -> set).thenCompose(set -> set == null
                                ? CompletableFuture.completedFuture(null) : set.closeAsync()))
                        .toArray(CompletableFuture[]::new))
                .thenCompose(done -> grants.closeAsync());
    }

    @Override
    public String toString() {
        return describe();
    }
}
