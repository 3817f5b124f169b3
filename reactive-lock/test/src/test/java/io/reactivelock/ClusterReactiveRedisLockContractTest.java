package io.reactivelock;

import io.lettuce.core.cluster.RedisClusterClient;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.NeedsRedis;
import io.reactivelock.support.RedisCluster;
import io.reactivelock.support.RedisServer;
import io.reactivelock.testing.ReactiveLockContract;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;

/**
 * The {@link ReactiveLockContract} on the Redis client against a real three-master Redis Cluster,
 * its multi-lock from a client of the same Cluster (names on different slots); a lease expires by
 * deleting its key on the node that owns its slot.
 */
@NeedsRedis
class ClusterReactiveRedisLockContractTest extends ReactiveLockContract {

    private static RedisCluster cluster;
    private final List<ReactiveRedisLock> created = new ArrayList<>();
    private RedisClusterClient client;

    @BeforeAll
    static void startCluster() {
        cluster = RedisCluster.start(3, 0);
    }

    @AfterAll
    static void stopCluster() {
        cluster.close();
    }

    @BeforeEach
    void connect() {
        cluster.masters().forEach(master -> master.call("FLUSHALL"));
        client = RedisClusterClient.create(cluster.uris());
    }

    @AfterEach
    void closeClients() {
        created.forEach(ReactiveRedisLock::close);
        client.shutdown();
    }

    private ReactiveRedisLock clusterClient(LockOptions options) {
        ReactiveRedisLock lock = ReactiveRedisLock.create(client, options);
        created.add(lock);
        return lock;
    }

    @Override
    protected ReactiveLock newLock(LockOptions options) {
        return clusterClient(options);
    }

    @Override
    protected ReactiveMultiLock newMultiLock(LockOptions options) {
        return clusterClient(options).multiLock();
    }

    private static RedisServer owner(String key) {
        return cluster.owner(cluster.slot(key));
    }

    @Override
    protected void expireLease(String name) {
        String key = "lock:{" + name + "}";
        owner(key).call("DEL", key);
    }

    @Override
    protected boolean isLocked(String name) {
        String key = "lock:{" + name + "}";
        return "1".equals(owner(key).call("EXISTS", key));
    }
}
