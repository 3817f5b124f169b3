package io.reactivelock.spring;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.redis.ReactiveRedisMultiLock;
import io.reactivelock.redis.ReactiveRedisReadWriteLock;
import io.reactivelock.redis.ReactiveRedisSemaphore;
import io.reactivelock.inspect.InspectorOptions;
import io.reactivelock.inspect.LockInspector;
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

    /** Connects (blocking, at start-up) and creates the lock. */
    ReactiveRedisLock lock(LockOptions options) {
        if (client != null) {
            return ReactiveRedisLock.create(client, options);
        }
        return ReactiveRedisLock.create(clusterClient, options);
    }

    /** Connects (blocking) and creates a semaphore; not on a Cluster, which it does not support yet. */
    ReactiveRedisSemaphore semaphore(LockOptions options) {
        return ReactiveRedisSemaphore.create(standalone("ReactiveSemaphore"), options);
    }

    /** Connects (blocking) and creates a read-write lock; not on a Cluster, which it does not support yet. */
    ReactiveRedisReadWriteLock readWriteLock(LockOptions options) {
        return ReactiveRedisReadWriteLock.create(standalone("ReactiveReadWriteLock"), options);
    }

    /** Connects (blocking) and creates a multi-lock. */
    ReactiveRedisMultiLock multiLock(LockOptions options) {
        if (client != null) {
            return ReactiveRedisMultiLock.create(client, options);
        }
        return ReactiveRedisMultiLock.create(clusterClient, options);
    }

    private RedisClient standalone(String primitive) {
        if (client == null) {
            throw new IllegalStateException(primitive + " runs on a standalone or Sentinel Redis, not on a Cluster "
                    + "(spring.data.redis.cluster.nodes is set)");
        }
        return client;
    }

    /** Connects (blocking) and creates an inspector of the same Redis. */
    LockInspector inspector(InspectorOptions options) {
        if (client != null) {
            return LockInspector.create(client, options);
        }
        return LockInspector.create(clusterClient, options);
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
