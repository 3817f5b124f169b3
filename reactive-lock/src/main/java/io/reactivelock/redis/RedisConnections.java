package io.reactivelock.redis;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.protocol.CommandType;
import io.lettuce.core.protocol.ProtocolKeyword;
import io.lettuce.core.protocol.RedisCommand;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Schedulers;

/**
 * The two connections of a client, made from a {@link RedisURI}, a {@link RedisClient} or a
 * {@link RedisClusterClient}: commands (for the scripts and the inspector) and pub/sub (for
 * release notices), whether they reach a Cluster, how to close what the client owns, and the
 * Lettuce client ({@link RedisClient}, or {@link RedisClusterClient} for a Cluster) that the grants'
 * own connections come from ({@link ReplicaAcks}).
 * Connecting blocks.
 */
record RedisConnections(LockCommands commands, Deployment deployment, boolean cluster,
        StatefulRedisPubSubConnection<String, String> pubSub, Supplier<CompletionStage<?>> close, AbstractRedisClient client) {

    /**
     * A client of its own for {@code uri}, on resources of its own whose connections consolidate
     * flushes ({@link ConsolidatedFlushes}), all closed with the connections. It rejects commands while
     * disconnected, so that an attempt made during an outage fails fast and is retried with
     * backoff instead of being replayed after its caller gave up. Scripts and {@code SET} (the
     * lock's {@code SET NX PX}) get no Lettuce timeout: the lock times every such command it awaits
     * on its own scheduler (the command timeout), so a second timer per command (Lettuce's timer
     * thread, busy in an uncontended pair's profile) bought nothing; every other command (the
     * pub/sub ones, the inspector's) keeps the URI's timeout.
     */
    static RedisConnections open(RedisURI uri) {
        Objects.requireNonNull(uri, "uri");
        ClientResources resources = ClientResources.builder().nettyCustomizer(new ConsolidatedFlushes()).build();
        RedisClient client = RedisClient.create(resources, uri);
        long timeoutNanos = uri.getTimeout().toNanos();
        client.setOptions(ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .timeoutOptions(TimeoutOptions.builder().timeoutSource(new TimeoutOptions.TimeoutSource() {
                    @Override
                    public long getTimeout(RedisCommand<?, ?, ?> command) {
                        ProtocolKeyword type = command.getType();
                        boolean timedByTheLock = type == CommandType.EVALSHA || type == CommandType.EVAL
                                || type == CommandType.SET;
                        return timedByTheLock ? 0 : timeoutNanos;
                    }

                    @Override
                    public TimeUnit getTimeUnit() {
                        return TimeUnit.NANOSECONDS;
                    }
                }).build())
                .build());
        try {
            return open(client, () -> client.shutdownAsync().thenCompose(done -> shutdown(resources)));
        } catch (RuntimeException e) {
            client.shutdownAsync().thenCompose(done -> shutdown(resources));
            throw e;
        }
    }

    /**
     * Shuts down {@code resources}, which a client of ours was given, from a thread that may block:
     * the client's shutdown completes on one of their event loops, and theirs takes their executors'
     * queue locks. Completes once they have shut down.
     */
    static CompletableFuture<Void> shutdown(ClientResources resources) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        Schedulers.boundedElastic().schedule(() -> resources.shutdown().addListener(future -> done.complete(null)));
        return done;
    }

    /** Connections from the caller's client, which stays open. */
    static RedisConnections open(RedisClient client) {
        Objects.requireNonNull(client, "client");
        return open(client, () -> CompletableFuture.completedFuture(null));
    }

    /**
     * A Cluster connection (each script goes to the node serving its keys' slot) and a Cluster
     * pub/sub connection (a {@code PUBLISH} on any node reaches it) from the caller's client, which
     * stays open.
     */
    static RedisConnections open(RedisClusterClient client) {
        Objects.requireNonNull(client, "client");
        StatefulRedisClusterConnection<String, String> commands = client.connect(StringCodec.UTF8);
        StatefulRedisPubSubConnection<String, String> pubSub = pubSub(commands, () -> client.connectPubSub(StringCodec.UTF8));
        return new RedisConnections(new LockCommands(commands.async()), new Deployment.Cluster(commands), true, pubSub,
                () -> CompletableFuture.allOf(commands.closeAsync(), pubSub.closeAsync()), client);
    }

    private static RedisConnections open(RedisClient client, Supplier<CompletionStage<?>> closeClient) {
        StatefulRedisConnection<String, String> commands = client.connect(StringCodec.UTF8);
        StatefulRedisPubSubConnection<String, String> pubSub = pubSub(commands, () -> client.connectPubSub(StringCodec.UTF8));
        return new RedisConnections(new LockCommands(commands.async()), new Deployment.Single(commands), false, pubSub,
                // The connections finish closing on the client's event loop; shutting the client down
                // from there would block that loop, so the shutdown hops off it first.
                () -> CompletableFuture.allOf(commands.closeAsync(), pubSub.closeAsync())
                        .thenComposeAsync(done -> closeClient.get(), task -> Schedulers.boundedElastic().schedule(task)), client);
    }

    /** The pub/sub connection {@code connect} opens; if it cannot, {@code commands} is closed before the error goes on. */
    private static StatefulRedisPubSubConnection<String, String> pubSub(StatefulConnection<String, String> commands,
            Supplier<StatefulRedisPubSubConnection<String, String>> connect) {
        try {
            return connect.get();
        } catch (RuntimeException e) {
            commands.closeAsync();
            throw e;
        }
    }
}
