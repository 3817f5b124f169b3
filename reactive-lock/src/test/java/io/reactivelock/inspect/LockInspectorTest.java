package io.reactivelock.inspect;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import org.junit.jupiter.api.BeforeEach;

/** {@link LockInspectorContract} on a standalone Redis. */
@WithRedis
class LockInspectorTest extends LockInspectorContract {

    private RedisClient client;
    private StatefulRedisConnection<String, String> connection;

    @BeforeEach
    void connect(RedisServer redis) {
        client = RedisClient.create(redis.uri());
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

    @Override
    RedisClusterAsyncCommands<String, String> redis() {
        return connection.async();
    }

}
