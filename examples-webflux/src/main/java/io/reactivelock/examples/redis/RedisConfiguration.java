package io.reactivelock.examples.redis;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveRedisLock;
import io.reactivelock.examples.ExampleProperties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Wires the lock by hand: where Redis is, one Lettuce client, the {@link ReactiveRedisLock} and a
 * connection for the report cache.
 *
 * <p>Order matters and Spring follows the parameters: the endpoint (which may start an embedded
 * redis-server) is created before the lock and the cache connection, and destroyed after them.
 * Everything here blocks (connecting, starting a process), which is fine: it runs on the main
 * thread at start-up and on the shutdown thread at the end, never on a reactive thread.
 */
@Configuration(proxyBeanMethods = false)
public class RedisConfiguration {

    private static final Logger log = LoggerFactory.getLogger(RedisConfiguration.class);

    /** {@code example.redis.url} (from {@code REDIS_URL} or {@code spring.data.redis.url}), else an embedded server. */
    @Bean(destroyMethod = "close")
    RedisEndpoint redisEndpoint(ExampleProperties properties) {
        if (properties.redis().embedded()) {
            RedisEndpoint endpoint = RedisEndpoint.startEmbedded();
            log.info("No REDIS_URL configured: started {}", endpoint);
            return endpoint;
        }
        RedisEndpoint endpoint = RedisEndpoint.external(properties.redis().url());
        log.info("Using Redis at {}", endpoint);
        return endpoint;
    }

    @Bean
    LockOptions lockOptions(ExampleProperties properties) {
        ExampleProperties.Lock lock = properties.lock();
        return LockOptions.builder()
                .keyPrefix(lock.keyPrefix())
                .acquireTimeout(lock.acquireTimeout())
                .backoff(lock.minBackoff(), lock.maxBackoff())
                .maxLeaseTime(lock.maxLeaseTime())
                .fair(lock.fair())
                .build();
    }

    /**
     * One Lettuce client (one set of event-loop threads) for the whole app. Connecting happens in
     * the beans below, at start-up.
     */
    @Bean(destroyMethod = "shutdown")
    RedisClient redisClient(RedisEndpoint endpoint) {
        RedisClient client = RedisClient.create(endpoint.uri());
        // Fail commands at once while disconnected, instead of queueing them and replaying them
        // after their caller gave up: the lock retries its attempts itself, with backoff.
        client.setOptions(ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .build());
        return client;
    }

    /**
     * The lock opens its own two connections from the shared client (commands, and pub/sub to
     * hear about releases) and owns them; the client stays ours. Being created after the endpoint
     * and the client, it is destroyed before them. Its {@code close()} is
     * {@code closeAsync().block()}: blocking is fine there, on the shutdown thread. Locks still
     * held then expire by their TTL.
     */
    @Bean(destroyMethod = "close")
    ReactiveRedisLock reactiveRedisLock(RedisClient client, LockOptions options) {
        return ReactiveRedisLock.create(client, options);
    }

    /** The app's own Redis commands (the report cache), on the shared client. */
    @Bean(destroyMethod = "close")
    StatefulRedisConnection<String, String> redisConnection(RedisClient client) {
        return client.connect(StringCodec.UTF8);
    }
}
