package io.reactivelock.redis;

import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisConnectionStateListener;
import io.lettuce.core.RedisException;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.LockOptions;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
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
 */
final class ReplicaAcks {

    private final StatefulRedisConnection<String, String> connection;
    private final LockCommands commands;
    private final boolean all;
    private final long timeoutMillis;
    private final RedisClient client;
    private final RedisConnectionStateListener reconnects;
    private volatile int wanted;
    private final Queue<Pending<?>> next = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean waiting = new AtomicBoolean();
    /** What the last {@code WAIT} that came back short answered, and the replicas the master reported then. */
    private volatile @Nullable String lastShort;
    /**
     * Why no grant can be acknowledged at all, for a user who may not run {@code INFO} or
     * {@code WAIT}: every grant then fails at once with it. Such a user can still inspect.
     */
    private final @Nullable String refused;

    private ReplicaAcks(RedisClient client, StatefulRedisConnection<String, String> connection, boolean all, int wanted,
            Duration timeout, @Nullable String refused) {
        this.client = client;
        this.refused = refused;
        this.connection = connection;
        this.commands = new LockCommands(connection.async());
        this.all = all;
        this.wanted = wanted;
        this.timeoutMillis = Math.max(1, timeout.toMillis());
        this.reconnects = new RedisConnectionStateListener() {
            @Override
            public void onRedisConnected(RedisChannelHandler<?, ?> handler, SocketAddress address) {
                if (handler == connection && ReplicaAcks.this.all) {
                    // A failover or a restart: wait for the replicas of the master reached now.
                    replicas().thenAccept(r -> ReplicaAcks.this.wanted = Math.max(1, r.connected()));
                }
            }
        };
        client.addListener(reconnects);
    }

    /**
     * The acknowledgements {@code options} ask for on the master {@code client} reaches, on a
     * connection of their own, or {@code null} when none are asked for (off, or every replica of
     * a master that has none). Connects and reads {@code INFO replication}: blocks.
     */
    static @Nullable ReplicaAcks open(RedisClient client, LockOptions options) {
        int asked = options.replicaAcknowledgement();
        if (asked == 0) {
            return null;
        }
        StatefulRedisConnection<String, String> connection = client.connect(StringCodec.UTF8);
        try {
            int connected = Replicas.parse(connection.sync().info("replication")).connected();
            if (asked == LockOptions.ALL_REPLICAS && connected == 0) {
                connection.close();
                return null;
            }
            boolean all = asked == LockOptions.ALL_REPLICAS;
            return new ReplicaAcks(client, connection, all, all ? connected : asked, options.replicaAckTimeout(), null);
        } catch (RedisCommandExecutionException e) {
            if (!String.valueOf(e.getMessage()).startsWith("NOPERM")) {
                connection.close();
                throw e;
            }
            // Not a lock user's ACL (an inspector's, say), or one from before the acknowledgements:
            // it connects, and a grant it makes fails, naming what is missing, and is released.
            return new ReplicaAcks(client, connection, false, 0, options.replicaAckTimeout(),
                    "replica-acknowledged grants need INFO and WAIT, which this user may not run (ACL +info +wait):"
                            + " grant them, or turn the acknowledgements off with LockOptions.replicaAcknowledgement(0) ("
                            + e.getMessage() + ")");
        } catch (RuntimeException e) {
            connection.close();
            throw e;
        }
    }

    /** How many replicas a grant waits for now. */
    int wanted() {
        return wanted;
    }

    /** Whether a {@code WAIT} is out or grants wait for one: every command sent on the grants' connection now waits behind it. */
    boolean waiting() {
        return waiting.get() || !next.isEmpty();
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
                next.add(new Pending<>(done, value));
                waitForReplicas();
            }
        });
        return done;
    }

    /** Sends one {@code WAIT} for every grant whose reply is in, unless one is out; its answer sends the next. */
    private void waitForReplicas() {
        while (!next.isEmpty() && waiting.compareAndSet(false, true)) {
            List<Pending<?>> batch = new ArrayList<>();
            for (Pending<?> p; (p = next.poll()) != null; ) {
                batch.add(p);
            }
            if (batch.isEmpty()) {
                waiting.set(false);
                continue;
            }
            int n = wanted;
            connection.async().waitForReplication(n, timeoutMillis)
                    .handle((acked, error) -> settle(batch, n, acked, error))
                    .thenCompose(settled -> settled)
                    .whenComplete((settled, error) -> {
                        waiting.set(false);
                        waitForReplicas();
                    });
            return;
        }
    }

    /**
     * Completes the grants of {@code batch}, or fails them with what the master reports of its
     * replicas (read before the next {@code WAIT}, which then waits for as many as it reports,
     * when waiting for all).
     */
    private CompletionStage<@Nullable Void> settle(List<Pending<?>> batch, int n, @Nullable Long acked, @Nullable Throwable error) {
        if (error != null) {
            batch.forEach(p -> p.done.completeExceptionally(error));
            return CompletableFuture.<@Nullable Void>completedFuture(null);
        } else if (acked != null && acked >= n) {
            batch.forEach(Pending::complete);
            return CompletableFuture.<@Nullable Void>completedFuture(null);
        } else {
            long got = acked == null ? 0 : acked;
            return replicas().handle((seen, infoError) -> {
                NotReplicated e;
                if (seen == null) {
                    e = new NotReplicated("WAIT " + n + " " + timeoutMillis + " answered " + got
                            + " and INFO replication failed: " + infoError, false);
                } else {
                    if (all) {
                        wanted = Math.max(1, seen.connected());
                    }
                    // Waiting for all, a replica that left is no longer waited for; none left, or fewer than a set number, is final.
                    e = new NotReplicated("WAIT " + n + " " + timeoutMillis + " answered " + got + "; the master reports "
                            + seen, all ? seen.connected() == 0 : seen.connected() < n);
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
        return "ReplicaAcks{wanted=" + wanted + (all ? " (all)" : "") + ", timeout=" + timeoutMillis + " ms}";
    }
}
