package io.reactivelock.examples.redis;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The app's own Redis connection, for the report cache. The lock itself is not wired here: the
 * library's auto-configuration makes it from {@code spring.data.redis.*} (which
 * {@link EmbeddedRedisInitializer} sets) and {@code reactive-lock.*}.
 *
 * <p>Connecting blocks, which is fine: it runs on the main thread at start-up and on the
 * shutdown thread at the end, never on a reactive thread.
 */
@Configuration(proxyBeanMethods = false)
public class RedisConfiguration {

    @Bean(destroyMethod = "shutdown")
    RedisClient redisClient(RedisEndpoint endpoint) {
        RedisClient client = RedisClient.create(endpoint.uri());
        // Fail commands at once while disconnected, instead of queueing them and replaying them
        // after their caller gave up.
        client.setOptions(ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .build());
        return client;
    }

    /** The report cache's connection. */
    @Bean(destroyMethod = "close")
    StatefulRedisConnection<String, String> redisConnection(RedisClient client) {
        return client.connect(StringCodec.UTF8);
    }
}
