package io.reactivelock.redis;

import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisConnectionStateListener;
import io.lettuce.core.RedisException;
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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * Replica-acknowledged writes: the grant and renewal scripts run on a connection of their own,
 * and a reply that says the script granted or renewed completes only once the replicas
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
final class ReplicaAcks {

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
    private final LockCommands commands;
    private final boolean all;
    private final boolean durable;
    private final long timeoutMillis;
    private final RedisClient client;
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

    private ReplicaAcks(RedisClient client, StatefulRedisConnection<String, String> connection, boolean all, boolean durable,
            int wanted, Duration timeout, @Nullable String refused) {
        this.client = client;
        this.refused = refused;
        this.connection = connection;
        this.commands = new LockCommands(connection.async());
        this.all = all;
        this.durable = durable;
        this.wanted = wanted;
        this.timeoutMillis = Math.max(1, timeout.toMillis());
        this.reconnects = new RedisConnectionStateListener() {
            @Override
            public void onRedisConnected(RedisChannelHandler<?, ?> handler, SocketAddress address) {
                if (handler == connection && ReplicaAcks.this.all) {
                    // A failover or a restart: wait for the replicas of the master reached now.
                    replicas().thenAccept(r -> ReplicaAcks.this.wanted = replicasFor(r));
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
    static @Nullable ReplicaAcks open(RedisClient client, LockOptions options) {
        int asked = options.replicaAcknowledgement();
        boolean durable = options.durableGrants();
        if (asked == 0 && !durable) {
            return null;
        }
        StatefulRedisConnection<String, String> connection = client.connect(StringCodec.UTF8);
        try {
            if (durable) {
                checkDurable(connection);
            }
            int connected = asked == 0 ? 0 : Replicas.parse(connection.sync().info("replication")).connected();
            if (asked == LockOptions.ALL_REPLICAS && connected == 0 && !durable) {
                connection.close();
                return null;
            }
            boolean all = asked == LockOptions.ALL_REPLICAS;
            return new ReplicaAcks(client, connection, all, durable, all ? connected : asked, options.replicaAckTimeout(), null);
        } catch (RedisCommandExecutionException e) {
            boolean noperm = String.valueOf(e.getMessage()).startsWith("NOPERM");
            if (durable || !noperm) {
                connection.close();
                throw durable && noperm ? new IllegalStateException("durable grants (LockOptions.durableGrants(true)) that wait"
                        + " for replicas need INFO, which this user may not run (ACL +info): " + e.getMessage(), e) : e;
            }
            // Not a lock user's ACL (an inspector's, say), or one from before the acknowledgements:
            // it connects, and a grant it makes fails, naming what is missing, and is released.
            return new ReplicaAcks(client, connection, false, false, 0, options.replicaAckTimeout(),
                    "replica-acknowledged grants need INFO and WAIT, which this user may not run (ACL +info +wait):"
                            + " grant them, or turn the acknowledgements off with LockOptions.replicaAcknowledgement(0) ("
                            + e.getMessage() + ")");
        } catch (RuntimeException e) {
            connection.close();
            throw e;
        }
    }

    /**
     * Whether the master can make durable grants: {@code WAITAOF 1 0 1}, answered at once on a
     * connection that wrote nothing, is refused by a server without it, with the AOF off, or for a
     * user who may not run it.
     */
    private static void checkDurable(StatefulRedisConnection<String, String> connection) {
        try {
            connection.sync().dispatch(WAITAOF, new ArrayOutput<>(StringCodec.UTF8),
                    new CommandArgs<>(StringCodec.UTF8).add(1).add(0).add(1));
        } catch (RedisCommandExecutionException e) {
            String message = String.valueOf(e.getMessage());
            String why = message.startsWith("NOPERM") ? "this user may not run WAITAOF (ACL +waitaof)"
                    : message.contains("appendonly") ? "the master's append-only file is off (appendonly no): turn it on"
                            + " (CONFIG SET appendonly yes, and in its configuration file)"
                    : "the server has no WAITAOF, which Redis 7.2 and Valkey 8 have";
            throw new IllegalStateException("durable grants (LockOptions.durableGrants(true)) cannot be made: " + why
                    + "; the server answered WAITAOF with: " + message, e);
        }
    }

    /** The replicas to wait for when waiting for all: as many as {@code seen}, at least one unless grants are durable. */
    private int replicasFor(Replicas seen) {
        // Without durable grants, acknowledgements run only where replicas were seen: none left is final (see settle).
        return durable ? seen.connected() : Math.max(1, seen.connected());
    }

    /** How many replicas a grant waits for now. */
    int wanted() {
        return wanted;
    }

    /** Whether an acknowledgement is out or grants wait for one: every command sent on the grants' connection now waits behind it. */
    boolean waiting() {
        return commits.busy();
    }

    /** {@code script} on the grants' connection; a reply that {@code wrote} completes once acknowledged. */
    CompletionStage<Long> run(LuaScript script, Predicate<Long> wrote, String[] keys, String... args) {
        return acknowledged(commands.run(script, keys, args), wrote);
    }

    /** {@link LockCommands#setIfAbsent} on the grants' connection; a set key completes once acknowledged. */
    CompletionStage<Boolean> setIfAbsent(String key, String value, long ttlMillis) {
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
                commits.add(new Pending<>(done, value));
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
        return answer.handle((acked, error) -> settle(batch, n, acked, error)).thenCompose(settled -> settled);
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
            // An error reply (the AOF turned off, the command no longer allowed) is not mended by retrying.
            Throwable failure = e instanceof RedisCommandExecutionException
                    ? new NotReplicated(sent + " was refused: " + e.getMessage(), true) : error;
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

    /** Closes the grants' connection; stops listening for its reconnects. */
    CompletionStage<Void> closeAsync() {
        client.removeListener(reconnects);
        return connection.closeAsync();
    }

    private record Pending<T>(CompletableFuture<T> done, T value) {
        void complete() {
            done.complete(value);
        }
    }

    /** The replicas of {@code INFO replication}: how many are connected, and each as {@code ip:port state lag}. */
    record Replicas(int connected, List<String> each) {

        static Replicas parse(String info) {
            int connected = 0;
            List<String> each = new ArrayList<>();
            for (String line : info.split("\r?\n")) {
                if (line.startsWith("connected_slaves:")) {
                    connected = Integer.parseInt(line.substring("connected_slaves:".length()).trim());
                } else if (line.matches("slave[0-9]+:.*")) {
                    String ip = "";
                    String port = "";
                    String state = "";
                    String lag = "";
                    for (String field : line.substring(line.indexOf(':') + 1).trim().split(",")) {
                        int eq = field.indexOf('=');
                        String value = eq < 0 ? "" : field.substring(eq + 1);
                        switch (eq < 0 ? field : field.substring(0, eq)) {
                            case "ip" -> ip = value;
                            case "port" -> port = value;
                            case "state" -> state = value;
                            case "lag" -> lag = value;
                            default -> { }
                        }
                    }
                    each.add(ip + ":" + port + " " + state + " lag " + lag + " s");
                }
            }
            return new Replicas(connected, List.copyOf(each));
        }

        @Override
        public String toString() {
            return connected + " connected replica" + (connected == 1 ? "" : "s") + (each.isEmpty() ? "" : " " + each);
        }
    }

    /**
     * The replicas did not acknowledge a grant or renewal in time; {@code gone} when the master
     * reports no connected replica left (or fewer than a number set), which more waiting cannot mend.
     */
    static final class NotReplicated extends RedisException {
        private static final long serialVersionUID = 1L;
        final boolean gone;

        NotReplicated(String message, boolean gone) {
            super(message);
            this.gone = gone;
        }

        @Override
        public Throwable fillInStackTrace() {
            return this;
        }
    }

    /** {@link #toString()}, and what the last {@code WAIT} that came back short answered. */
    String describe() {
        String s = lastShort;
        return this + (s == null ? "" : "; the last WAIT that came back short: " + s);
    }

    @Override
    public String toString() {
        return "ReplicaAcks{wanted=" + wanted + (all ? " (all)" : "") + (durable ? ", durable (WAITAOF)" : "")
                + ", timeout=" + timeoutMillis + " ms}";
    }
}
