package io.reactivelock.inspect;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.redis.RedisInternals;
import io.reactivelock.support.NeedsRedis;
import io.reactivelock.support.RedisCluster;
import io.reactivelock.support.RedisServer;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Sinks;

/**
 * {@link LockInspectorContract} on a three-master Redis Cluster: listing scans every master. The
 * semaphores and read-write locks of the contract are the Cluster client's own: every key of a name
 * lives in the name's slot.
 */
@NeedsRedis
class ClusterLockInspectorTest extends LockInspectorContract {

    private static RedisCluster cluster;

    private RedisClusterClient client;
    private StatefulRedisClusterConnection<String, String> connection;

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
        client.setOptions(ClusterClientOptions.builder()
                .disconnectedBehavior(ClusterClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .build());
        closedAfterTheTest(client::shutdown);
        connection = closedAfterTheTest(client.connect(StringCodec.UTF8));
    }

    @Override
    ReactiveRedisLock lock(LockOptions options) {
        return closedAfterTheTest(ReactiveRedisLock.create(client, options));
    }

    @Override
    RedisClusterAsyncCommands<String, String> redis() {
        return connection.async();
    }

    @Test
    void locksOnEveryMasterAreListedAndTheCursorsVisitEveryMaster() {
        ReactiveRedisLock lock = lock(LockOptions.defaults());
        List<String> names = IntStream.range(0, 60).mapToObj(i -> "spread-" + i).toList();
        Sinks.Empty<Void> release = Sinks.empty();
        names.forEach(name -> hold(lock, name, release));
        for (RedisServer master : cluster.masters()) {
            assertThat(master.callList("KEYS", "lock:{spread-*}")).as("locks on " + master).isNotEmpty();
        }
        LockInspector inspector = inspector();

        Set<String> nodesScanned = new HashSet<>();
        Set<String> listed = new HashSet<>();
        LockPage page = inspector.page(null, 10).block(WAIT);
        while (true) {
            listed.addAll(page.names());
            if (page.last()) {
                break;
            }
            nodesScanned.add(page.cursor().substring(0, page.cursor().indexOf(':')));
            page = inspector.page(page.cursor(), 10).block(WAIT);
        }

        assertThat(listed).containsExactlyInAnyOrderElementsOf(names);
        assertThat(nodesScanned).as("cursors name every master").containsExactlyInAnyOrderElementsOf(
                cluster.masters().stream().map(cluster::id).toList());
    }
}
