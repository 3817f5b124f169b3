package io.reactivelock.inspect;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.LockLease;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.NeedsRedis;
import io.reactivelock.support.RedisSentinelSet;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Sinks;

/**
 * {@link LockInspectorContract} through Sentinel: the inspector of a client made from a Sentinel
 * {@link io.lettuce.core.RedisURI} reads the master the Sentinels name.
 */
@NeedsRedis
class SentinelLockInspectorTest extends LockInspectorContract {

    private static RedisSentinelSet sentinels;

    private RedisClient client;
    private StatefulRedisConnection<String, String> connection;

    @BeforeAll
    static void startSentinels() {
        sentinels = RedisSentinelSet.start();
    }

    @AfterAll
    static void stopSentinels() {
        sentinels.close();
    }

    @BeforeEach
    void connect() {
        sentinels.master().call("FLUSHALL");
        client = RedisClient.create(sentinels.uri());
        client.setOptions(ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .build());
        closedAfterTheTest(client::shutdown);
        connection = closedAfterTheTest(client.connect(StringCodec.UTF8));
    }

    @Override
    ReactiveRedisLock lock(LockOptions options) {
        return closedAfterTheTest(ReactiveRedisLock.create(client, options));
    }

    /** Made from the Sentinel URI, as a user would: the client owns the Lettuce client it creates. */
    @Override
    ReactiveRedisLock inspectingClient(LockOptions options) {
        return closedAfterTheTest(ReactiveRedisLock.create(sentinels.uri(), options));
    }

    @Override
    RedisClusterAsyncCommands<String, String> redis() {
        return connection.async();
    }

    @Test
    void theLockShownIsTheOneOnTheMasterTheSentinelsName() {
        LockLease lease = hold(lock(LockOptions.defaults()), "order", Sinks.empty());

        LockState state = inspector().inspect("order").block(WAIT);

        assertThat(state.holder()).isEqualTo(sentinels.master().call("GET", "lock:{order}").substring(0, 8))
                .isEqualTo(shown(lease));
        assertThat(state.fencingToken()).isEqualTo(lease.fencingToken());
    }
}
