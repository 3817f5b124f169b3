package io.reactivelock.spring;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SslOptions;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.resource.ClientResources;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ConsolidatedFlushes;
import io.reactivelock.redis.ReactiveRedisLock;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The Lettuce client of the auto-configured lock, shut down after the lock is closed. Commands are rejected while disconnected, as
 * {@link ReactiveRedisLock#create(io.lettuce.core.RedisURI, LockOptions)} does, so that the lock
 * retries instead of replaying stale attempts, and its connections consolidate flushes
 * ({@link ConsolidatedFlushes}). The client runs on the application's Lettuce
 * {@link ClientResources} (event loops, timers) when it has them, which it then keeps running,
 * and otherwise on resources of its own, shut down with it.
 */
final class RedisLockConnection implements AutoCloseable {

    private final @Nullable RedisClient client;
    private final @Nullable RedisClusterClient clusterClient;
    /** The resources made for this client alone, shut down with it; null on the application's. */
    private final @Nullable ClientResources ownResources;

    private RedisLockConnection(@Nullable RedisClient client, @Nullable RedisClusterClient clusterClient,
            @Nullable ClientResources ownResources) {
        this.client = client;
        this.clusterClient = clusterClient;
        this.ownResources = ownResources;
    }

    /** The application's resources with consolidated flushes, or resources of the lock's own when it has none. */
    private static ClientResources resources(@Nullable ClientResources application) {
        return application == null ? ClientResources.builder().nettyCustomizer(new ConsolidatedFlushes()).build()
                : ConsolidatedFlushes.sharing(application);
    }

    /** From the hand-bound {@code spring.data.redis.*} properties, for an application without Spring Boot's Redis support. */
    static RedisLockConnection of(RedisSettings settings) {
        return settings.isCluster() ? cluster(settings.clusterNodes(), null, null) : standalone(settings.uri(), null, null);
    }

    /** A standalone or Sentinel-managed Redis. */
    static RedisLockConnection standalone(RedisURI uri, @Nullable SslOptions ssl, @Nullable ClientResources resources) {
        RedisClient client = RedisClient.create(resources(resources), uri);
        ClientOptions.Builder options = ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS);
        if (ssl != null) {
            options.sslOptions(ssl);
        }
        client.setOptions(options.build());
        return new RedisLockConnection(client, null, resources == null ? client.getResources() : null);
    }

    /** A Redis Cluster, from its seed nodes. */
    static RedisLockConnection cluster(List<RedisURI> nodes, @Nullable SslOptions ssl, @Nullable ClientResources resources) {
        RedisClusterClient cluster = RedisClusterClient.create(resources(resources), nodes);
        ClusterClientOptions.Builder options = ClusterClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS);
        if (ssl != null) {
            options.sslOptions(ssl);
        }
        cluster.setOptions(options.build());
        return new RedisLockConnection(null, cluster, resources == null ? cluster.getResources() : null);
    }

    /** The Lettuce client resources (event loops, timers) the client runs on. */
    ClientResources clientResources() {
        return client != null ? client.getResources() : clusterClient.getResources();
    }

    /** Connects (blocking, at start-up) and creates the lock client, which hands out every primitive. */
    ReactiveRedisLock lock(LockOptions options) {
        if (client != null) {
            return ReactiveRedisLock.create(client, options);
        }
        return ReactiveRedisLock.create(clusterClient, options);
    }

    /** Shuts the client down, and its resources unless they share the application's; blocking. */
    @Override
    public void close() {
        if (client != null) {
            client.shutdown();
        }
        if (clusterClient != null) {
            clusterClient.shutdown();
        }
        if (ownResources != null) {
            ownResources.shutdown().syncUninterruptibly();
        }
    }
}
