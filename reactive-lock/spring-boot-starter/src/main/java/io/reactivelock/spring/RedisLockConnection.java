package io.reactivelock.spring;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import org.jspecify.annotations.Nullable;

/**
 * The Lettuce client of the auto-configured lock, shut down after the lock is closed. Commands are rejected while disconnected, as
 * {@link ReactiveRedisLock#create(io.lettuce.core.RedisURI, LockOptions)} does, so that the lock
 * retries instead of replaying stale attempts.
 */
final class RedisLockConnection implements AutoCloseable {

    private final @Nullable RedisClient client;
    private final @Nullable RedisClusterClient clusterClient;

    private RedisLockConnection(@Nullable RedisClient client, @Nullable RedisClusterClient clusterClient) {
        this.client = client;
        this.clusterClient = clusterClient;
    }

    static RedisLockConnection of(RedisSettings settings) {
        if (settings.isCluster()) {
            RedisClusterClient cluster = RedisClusterClient.create(settings.clusterNodes());
            cluster.setOptions(ClusterClientOptions.builder()
                    .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                    .build());
            return new RedisLockConnection(null, cluster);
        }
        RedisClient client = RedisClient.create(settings.uri());
        client.setOptions(ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .build());
        return new RedisLockConnection(client, null);
    }

    /** Connects (blocking, at start-up) and creates the lock client, which hands out every primitive. */
    ReactiveRedisLock lock(LockOptions options) {
        if (client != null) {
            return ReactiveRedisLock.create(client, options);
        }
        return ReactiveRedisLock.create(clusterClient, options);
    }

    /** Shuts the client down; blocking. */
    @Override
    public void close() {
        if (client != null) {
            client.shutdown();
        }
        if (clusterClient != null) {
            clusterClient.shutdown();
        }
    }
}
