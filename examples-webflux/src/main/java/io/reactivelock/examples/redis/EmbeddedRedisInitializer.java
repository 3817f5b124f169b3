package io.reactivelock.examples.redis;

import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.context.ApplicationContextInitializer;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * Decides where Redis is before any bean is made, so that the library's auto-configuration finds
 * it in {@code spring.data.redis.url}: {@code example.redis.url} (from {@code REDIS_URL} or
 * {@code spring.data.redis.url}), else an embedded redis-server started here. Registered in
 * {@code META-INF/spring.factories}, so {@code main} and every {@code @SpringBootTest} go through it.
 *
 * <p>The {@link RedisEndpoint} becomes a bean registered before all others, hence destroyed after
 * all others: the embedded server stops only once the lock and the web server are closed. Starting
 * the server blocks, which is fine here: the main thread, at start-up.
 */
public final class EmbeddedRedisInitializer implements ApplicationContextInitializer<ConfigurableApplicationContext> {

    private static final Logger log = LoggerFactory.getLogger(EmbeddedRedisInitializer.class);

    @Override
    public void initialize(ConfigurableApplicationContext context) {
        ConfigurableEnvironment environment = context.getEnvironment();
        String configured = environment.getProperty("example.redis.url", "");
        RedisEndpoint endpoint;
        String url;
        if (configured.isBlank()) {
            endpoint = RedisEndpoint.startEmbedded();
            url = endpoint.embeddedServer().url();
            log.info("No REDIS_URL configured: started {}", endpoint);
        } else {
            endpoint = RedisEndpoint.external(configured);
            url = configured;
            log.info("Using Redis at {}", endpoint);
        }
        environment.getPropertySources().addFirst(new MapPropertySource("exampleRedis", Map.of("spring.data.redis.url", url)));
        DefaultListableBeanFactory beans = (DefaultListableBeanFactory) context.getBeanFactory();
        beans.registerSingleton("redisEndpoint", endpoint);
        beans.registerDisposableBean("redisEndpoint", endpoint::close);
    }
}
