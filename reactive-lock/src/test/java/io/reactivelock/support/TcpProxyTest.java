package io.reactivelock.support;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The proxy itself: a client keeps working through it after a cut. */
@WithRedis
class TcpProxyTest {

    @Test
    void aCommandWhoseReplyIsDroppedFailsOnTheCutAndTheClientReconnects(RedisServer redis) throws Exception {
        try (TcpProxy proxy = TcpProxy.to(redis)) {
            RedisClient client = RedisClient.create(proxy.uri());
            client.setOptions(ClientOptions.builder()
                    .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS).build());
            try (StatefulRedisConnection<String, String> connection = client.connect(StringCodec.UTF8)) {
                connection.sync().set("k", "v1");
                proxy.dropReplies(true);
                RedisFuture<String> pending = connection.async().get("k");
                await().until(() -> proxy.droppedReplyBytes() > 0);
                proxy.dropReplies(false);
                proxy.cutConnections();
                assertThat(pending.handle((value, error) -> error).toCompletableFuture().get(5, TimeUnit.SECONDS))
                        .as("a command in flight fails when its connection is cut").isInstanceOf(RedisException.class);
                await().pollInterval(Duration.ofMillis(10)).atMost(Duration.ofSeconds(10))
                        .ignoreExceptions().until(() -> "v1".equals(connection.sync().get("k")));
                assertThat(proxy.connectionsAccepted()).isEqualTo(2);
            } finally {
                client.shutdown();
            }
        }
    }

    @Test
    void aClientReconnectsThroughTheProxyAfterACutAndWorksAgain(RedisServer redis) {
        try (TcpProxy proxy = TcpProxy.to(redis)) {
            RedisClient client = RedisClient.create(proxy.uri());
            try (StatefulRedisConnection<String, String> connection = client.connect(StringCodec.UTF8)) {
                connection.sync().set("k", "v1");
                proxy.cutConnections();
                await().pollInterval(Duration.ofMillis(10)).atMost(Duration.ofSeconds(10))
                        .ignoreExceptions().until(() -> "v1".equals(connection.sync().get("k")));
                assertThat(proxy.connectionsAccepted()).isEqualTo(2);
            } finally {
                client.shutdown();
            }
        }
    }
}
