package io.reactivelock.redis;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisConnectionStateListener;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.ArrayOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.ProtocolKeyword;
import io.reactivelock.LockOptions;
import io.reactivelock.spi.LockCore;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * One master's replica-acknowledged writes: the grant and renewal scripts run on a connection of
 * their own, and a reply that says the script granted or renewed completes only once the replicas
 * acknowledged it ({@code WAIT numreplicas timeout}). {@code WAIT} answers for every write its
 * connection sent before it and blocks that connection until it answers, so it never runs on the
 * shared command connection (releases, the inspector), and grants share it: every grant whose
 * reply came in while no {@code WAIT} was out goes with the next one, a group commit, so that
 * unrelated acquisitions are not serialised one {@code WAIT} each.
 *
 * <p>A grant counts as covered by a {@code WAIT} only if its reply arrived before that
 * {@code WAIT} was sent: replies come in the order the commands were sent, so its script was
 * earlier on the connection. A grant whose {@code WAIT} answered fewer replicas than wanted fails
 * with {@link NotReplicated}, a transient error (a renewal is retried while the lease is valid;
 * an acquisition releases the grant and tries again, {@link AcknowledgedStore}).
 *
 * <p>Durable grants ({@link LockOptions#durableGrants()}) send {@code WAITAOF 1 numreplicas timeout}
 * instead of {@code WAIT}, in the same group commit: a grant counts once the master's append-only
 * file has it (fsynced) and so have the replicas waited for.
 */
final class MasterAcks implements ReplicaAcks {

    /** {@code WAITAOF}, which Lettuce has no method for. */
    private static final ProtocolKeyword WAITAOF = new ProtocolKeyword() {
        @Override
        public byte[] getBytes() {
            return toString().getBytes(StandardCharsets.US_ASCII);
        }

        @Override
        public String toString() {
            return "WAITAOF";
        }
    };

    private final StatefulRedisConnection<String, String> connection;
    /**
     * Whether {@link #connection} is a node connection of a Cluster's grants connection (not closed
     * with this). Such a master may have had no replica when first counted (a replica promoted by a
     * failover has none yet): it then counts them again at each batch until one attaches (its old
     * master, say), where a standalone master without replicas gets no acknowledgements at all.
     */
    private final boolean clusterNode;
    /**
     * Bumped each time {@link #connection} drops: a {@code WAIT} answered on the connection that
     * replaced it (Lettuce replays commands that were out, unless it rejects them while
     * disconnected) vouches for no write sent on the old one.
     */
    private final AtomicLong drops = new AtomicLong();
    private final LockCommands commands;
    private final boolean all;
    private final boolean durable;
    private final long timeoutMillis;
    private final AbstractRedisClient client;
    private final RedisConnectionStateListener reconnects;
    private volatile int wanted;
    private final GroupCommit<Pending<?>> commits = new GroupCommit<>(this::acknowledge);
    /** What the last acknowledgement that came back short answered, and the replicas the master reported then. */
    private volatile @Nullable String lastShort;
    /**
     * Why no grant can be acknowledged at all, for a user who may not run {@code INFO} or
     * {@code WAIT}: every grant then fails at once with it. Such a user can still inspect.
     */
    private final @Nullable String refused;

    private MasterAcks(AbstractRedisClient client, StatefulRedisConnection<String, String> connection, boolean clusterNode,
            boolean all, boolean durable, int wanted, Duration timeout, @Nullable String refused) {
        this.client = client;
        this.refused = refused;
        this.connection = connection;
        this.clusterNode = clusterNode;
        this.commands = new LockCommands(connection.async());
        this.all = all;
        this.durable = durable;
        this.wanted = wanted;
        this.timeoutMillis = Math.max(1, timeout.toMillis());
        this.reconnects = new RedisConnectionStateListener() {
            @Override
            public void onRedisConnected(RedisChannelHandler<?, ?> handler, SocketAddress address) {
                if (handler == connection && MasterAcks.this.all) {
                    // A failover or a restart: wait for the replicas of the master reached now.
                    replicas().thenAccept(r -> MasterAcks.this.wanted = replicasFor(r));
                }
            }

            @Override
            public void onRedisDisconnected(RedisChannelHandler<?, ?> handler) {
                if (handler == connection) {
                    drops.incrementAndGet();
                }
            }
        };
        client.addListener(reconnects);
    }

    /**
     * The acknowledgements {@code options} ask for on the master {@code client} reaches, on a
     * connection of their own, or {@code null} when none are asked for (off, or every replica of
     * a master that has none, without durable grants). Connects, and reads {@code INFO replication}
     * and, for durable grants, whether {@code WAITAOF} runs: blocks.
     *
     * @throws IllegalStateException for durable grants on a server that cannot make them: without
     *     {@code WAITAOF} (before Redis 7.2 or Valkey 8), with the AOF off, or for a user who may not
     *     run {@code WAITAOF} or {@code INFO}
     */
    static @Nullable MasterAcks open(RedisClient client, LockOptions options) {
        if (options.replicaAcknowledgement() == 0 && !options.durableGrants()) {
            return null;
        }
        StatefulRedisConnection<String, String> connection = client.connect(StringCodec.UTF8);
        try {
            MasterAcks acks = join(on(client, connection, false, options));
            if (acks == null) {
                connection.close();
            }
            return acks;
        } catch (RuntimeException e) {
            connection.close();
            throw e;
        }
    }

    /**
     * Waits for {@code stage}, throwing what failed it as it is (not wrapped). Only for the client's
     * creation, which blocks by contract (it connects): never reached from an event loop.
     */
    static <T> T join(CompletionStage<T> stage) {
        try {
            return stage.toCompletableFuture().join();
        } catch (CompletionException e) {
            throw e.getCause() instanceof RuntimeException cause ? cause : e;
        }
    }

    /**
     * The acknowledgements {@code options} ask for on the master {@code connection} reaches, or
     * {@code null} when none are asked for: reads {@code INFO replication} and, for durable grants,
     * checks that {@code WAITAOF} runs. {@code clusterNode}: see {@link #clusterNode}. Fails with
     * {@link IllegalStateException} as {@link #open} throws it.
     */
    static CompletionStage<@Nullable MasterAcks> on(AbstractRedisClient client, StatefulRedisConnection<String, String> connection,
            boolean clusterNode, LockOptions options) {
        int asked = options.replicaAcknowledgement();
        boolean durable = options.durableGrants();
        if (asked == 0 && !durable) {
            return CompletableFuture.completedFuture(null);
        }
        CompletionStage<Integer> connected = (durable ? checkDurable(connection) : CompletableFuture.completedFuture(null))
                .thenCompose(checked -> asked == 0 ? CompletableFuture.completedFuture(0)
                        : connection.async().info("replication").thenApply(info -> Replicas.parse(info).connected()));
        return connected.handle((seen, error) -> {
            if (error == null) {
                if (asked == LockOptions.ALL_REPLICAS && seen == 0 && !durable && !clusterNode) {
                    return null;
                }
                boolean all = asked == LockOptions.ALL_REPLICAS;
                return new MasterAcks(client, connection, clusterNode, all, durable, all ? seen : asked, options.replicaAckTimeout(), null);
            }
            Throwable e = LockCore.unwrap(error);
            if (!(e instanceof RedisCommandExecutionException)) {
                throw e instanceof RuntimeException r ? r : new CompletionException(e);
            }
            boolean noperm = String.valueOf(e.getMessage()).startsWith("NOPERM");
            if (durable || !noperm) {
                throw durable && noperm ? new IllegalStateException("durable grants (LockOptions.durableGrants(true)) that wait"
                        + " for replicas need INFO, which this user may not run (ACL +info): " + e.getMessage(), e)
                        : (RedisCommandExecutionException) e;
            }
            // Not a lock user's ACL (an inspector's, say), or one from before the acknowledgements:
            // it connects, and a grant it makes fails, naming what is missing, and is released.
            return new MasterAcks(client, connection, clusterNode, false, false, 0, options.replicaAckTimeout(),
                    "replica-acknowledged grants need INFO and WAIT, which this user may not run (ACL +info +wait):"
                            + " grant them, or turn the acknowledgements off with LockOptions.replicaAcknowledgement(0) ("
                            + e.getMessage() + ")");
        });
    }

    /**
     * Whether the master can make durable grants: {@code WAITAOF 1 0 1}, answered at once on a
     * connection that wrote nothing, is refused by a server without it, with the AOF off, or for a
     * user who may not run it; such a refusal fails the stage with an {@link IllegalStateException}.
     */
    private static CompletionStage<@Nullable Void> checkDurable(StatefulRedisConnection<String, String> connection) {
        return connection.async().dispatch(WAITAOF, new ArrayOutput<>(StringCodec.UTF8),
                new CommandArgs<>(StringCodec.UTF8).add(1).add(0).add(1)).handle((answer, error) -> {
                    if (error == null) {
                        return null;
                    }
                    Throwable e = LockCore.unwrap(error);
                    if (!(e instanceof RedisCommandExecutionException)) {
                        throw e instanceof RuntimeException r ? r : new CompletionException(e);
                    }
                    String message = String.valueOf(e.getMessage());
                    String why = message.startsWith("NOPERM") ? "this user may not run WAITAOF (ACL +waitaof)"
                            : message.contains("appendonly") ? "the master's append-only file is off (appendonly no): turn it on"
                                    + " (CONFIG SET appendonly yes, and in its configuration file)"
                            : "the server has no WAITAOF, which Redis 7.2 and Valkey 8 have";
                    throw new IllegalStateException("durable grants (LockOptions.durableGrants(true)) cannot be made: " + why
                            + "; the server answered WAITAOF with: " + message, e);
                });
    }

    /** The replicas to wait for when waiting for all: as many as {@code seen}, at least one unless grants are durable. */
    private int replicasFor(Replicas seen) {
        // Without durable grants, acknowledgements run only where replicas were seen: none left is
        // final (see settle). A Cluster's master that had none when first counted counts them again
        // at each batch until one attaches (see acknowledge).
        return durable || wanted == 0 ? seen.connected() : Math.max(1, seen.connected());
    }

    @Override
    public boolean waiting() {
        return commits.busy();
    }

    @Override
    public CompletionStage<Long> run(LuaScript script, Predicate<Long> wrote, String[] keys, String... args) {
        return acknowledged(commands.run(script, keys, args), wrote);
    }

    @Override
    public CompletionStage<Boolean> setIfAbsent(String key, String value, long ttlMillis) {
        return acknowledged(commands.setIfAbsent(key, value, ttlMillis), set -> set);
    }

    private <T> CompletionStage<T> acknowledged(CompletionStage<T> reply, Predicate<T> wrote) {
        CompletableFuture<T> done = new CompletableFuture<>();
        reply.whenComplete((value, error) -> {
            if (error != null) {
                done.completeExceptionally(error);
            } else if (!wrote.test(value)) {
                done.complete(value);
            } else if (refused != null) {
                done.completeExceptionally(new NotReplicated(refused, true));
            } else {
                commits.add(new Pending<>(done, value, drops.get()));
            }
        });
        return done;
    }

    /**
     * Sends one {@code WAIT} (or {@code WAITAOF}) for {@code batch}, the grants whose replies came
     * in since the last one was sent, and settles them with its answer.
     */
    private CompletionStage<?> acknowledge(List<Pending<?>> batch) {
        int n = wanted;
        if (n == 0 && !durable) {
            // A Cluster's master without replicas when last counted: counted again first.
            return replicas().handle((seen, error) -> {
                if (error != null) {
                    NotReplicated e = new NotReplicated("INFO replication failed: " + error, false);
                    batch.forEach(p -> p.done.completeExceptionally(e));
                } else if (seen.connected() > 0) {
                    wanted = seen.connected();
                    return acknowledge(batch);
                } else {
                    batch.forEach(Pending::complete);
                }
                return CompletableFuture.completedFuture(null);
            }).thenCompose(sent -> sent);
        }
        long sentIn = drops.get();
        CompletionStage<long[]> answer;
        try {
            answer = durable
                    ? connection.async().dispatch(WAITAOF, new ArrayOutput<>(StringCodec.UTF8),
                            new CommandArgs<>(StringCodec.UTF8).add(1).add(n).add(timeoutMillis))
                            .thenApply(reply -> new long[] {(Long) reply.get(0), (Long) reply.get(1)})
                    : connection.async().waitForReplication(n, timeoutMillis).thenApply(acked -> new long[] {1, acked});
        } catch (RuntimeException e) {
            answer = CompletableFuture.failedStage(e);
        }
        return answer.handle((acked, error) -> {
            if (drops.get() != sentIn || batch.stream().anyMatch(p -> p.drops != sentIn)) {
                // The connection dropped between a grant's reply and this answer: it came on another connection.
                NotReplicated e = new NotReplicated("the grants' connection to the master dropped before its WAIT answered", false);
                batch.forEach(p -> p.done.completeExceptionally(e));
                return CompletableFuture.<@Nullable Void>completedFuture(null);
            }
            return settle(batch, n, acked, error);
        }).thenCompose(settled -> settled);
    }

    /**
     * Completes the grants of {@code batch}, or fails them with what the master reports of its
     * replicas (read before the next {@code WAIT}, which then waits for as many as it reports,
     * when waiting for all). {@code acked} is the local fsyncs ({@code 1} without durable grants)
     * and the replicas that acknowledged.
     */
    private CompletionStage<@Nullable Void> settle(List<Pending<?>> batch, int n, long @Nullable [] acked, @Nullable Throwable error) {
        String sent = durable ? "WAITAOF 1 " + n + " " + timeoutMillis : "WAIT " + n + " " + timeoutMillis;
        if (error != null) {
            Throwable e = LockCore.unwrap(error);
            // An error reply (the AOF turned off, the command no longer allowed) is not mended by
            // retrying; one that says the master was demoted meanwhile (a failover) is.
            String message = String.valueOf(e.getMessage());
            boolean demoted = message.startsWith("UNBLOCKED") || message.contains("replica instances");
            Throwable failure = e instanceof RedisCommandExecutionException
                    ? new NotReplicated(sent + " was refused: " + message, !demoted) : error;
            batch.forEach(p -> p.done.completeExceptionally(failure));
            return CompletableFuture.<@Nullable Void>completedFuture(null);
        } else if (acked != null && acked[0] >= 1 && acked[1] >= n) {
            batch.forEach(Pending::complete);
            return CompletableFuture.<@Nullable Void>completedFuture(null);
        } else if (acked != null && acked[1] >= n) {
            NotReplicated e = new NotReplicated(sent + " answered [" + acked[0] + ", " + acked[1]
                    + "]: the master's append-only file was not fsynced in time", false);
            lastShort = e.getMessage();
            batch.forEach(p -> p.done.completeExceptionally(e));
            return CompletableFuture.<@Nullable Void>completedFuture(null);
        } else {
            String got = acked == null ? "0" : durable ? "[" + acked[0] + ", " + acked[1] + "]" : Long.toString(acked[1]);
            return replicas().handle((seen, infoError) -> {
                NotReplicated e;
                if (seen == null) {
                    e = new NotReplicated(sent + " answered " + got + " and INFO replication failed: " + infoError, false);
                } else {
                    if (all) {
                        wanted = replicasFor(seen);
                    }
                    // Waiting for all, a replica that left is no longer waited for; none left (without durable
                    // grants), or fewer than a number set, is final.
                    e = new NotReplicated(sent + " answered " + got + "; the master reports " + seen
                            + (durable && seen.connected() >= n ? " (a replica counts once its own append-only file has the write:"
                                    + " is appendonly on on the replicas?)" : ""),
                            all ? seen.connected() == 0 && !durable : seen.connected() < n);
                }
                lastShort = e.getMessage();
                batch.forEach(p -> p.done.completeExceptionally(e));
                return null;
            });
        }
    }

    /** The replicas the master reports now, asked on the grants' connection (no {@code WAIT} blocks it after one answered). */
    private CompletionStage<Replicas> replicas() {
        return connection.async().info("replication").thenApply(Replicas::parse);
    }

    /** Stops listening for the grants' connection's reconnects, and closes it unless it is a Cluster's node connection. */
    @Override
    public CompletionStage<Void> closeAsync() {
        client.removeListener(reconnects);
        return clusterNode ? CompletableFuture.completedFuture(null) : connection.closeAsync();
    }

    /** A grant whose reply came in while {@link #drops} was {@code drops}, waiting for its acknowledgement. */
    private record Pending<T>(CompletableFuture<T> done, T value, long drops) {
        void complete() {
            done.complete(value);
        }
    }

    /** {@link #toString()}, and what the last {@code WAIT} that came back short answered. */
    @Override
    public String describe() {
        String s = lastShort;
        return this + (s == null ? "" : "; the last WAIT that came back short: " + s);
    }

    @Override
    public String toString() {
        return "MasterAcks{wanted=" + wanted + (all ? " (all)" : "") + (durable ? ", durable (WAITAOF)" : "")
                + ", timeout=" + timeoutMillis + " ms}";
    }
}
