package io.reactivelock.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.env.YamlPropertySourceLoader;
import org.springframework.core.env.AbstractEnvironment;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.io.ClassPathResource;

/** Where {@code example.redis.url} comes from, per application.yaml; without starting the app. */
class RedisUrlPropertyTest {

    @Test
    @DisplayName("with nothing set the Redis URL is empty, which means: start an embedded server")
    void emptyByDefault() throws IOException {
        assertThat(redisUrl(Map.of())).isEmpty();
    }

    @Test
    @DisplayName("REDIS_URL, else spring.data.redis.url, gives the Redis URL")
    void redisUrlThenSpringDataRedisUrl() throws IOException {
        assertThat(redisUrl(Map.of("spring.data.redis.url", "redis://b:2"))).isEqualTo("redis://b:2");
        assertThat(redisUrl(Map.of("REDIS_URL", "redis://a:1", "spring.data.redis.url", "redis://b:2"))).isEqualTo("redis://a:1");
    }

    @Test
    @DisplayName("example.redis.url set directly wins over both")
    void explicitProperty() throws IOException {
        assertThat(redisUrl(Map.of("REDIS_URL", "redis://a:1", "example.redis.url", "redis://c:3"))).isEqualTo("redis://c:3");
    }

    /** application.yaml under the given properties, and no others (not this machine's environment). */
    private static String redisUrl(Map<String, Object> properties) throws IOException {
        ConfigurableEnvironment environment = new AbstractEnvironment() {};
        environment.getPropertySources().addFirst(new MapPropertySource("given", properties));
        new YamlPropertySourceLoader().load("application.yaml", new ClassPathResource("application.yaml"))
                .forEach(environment.getPropertySources()::addLast);
        return Binder.get(environment).bind("example.redis.url", String.class).orElse("");
    }
}
