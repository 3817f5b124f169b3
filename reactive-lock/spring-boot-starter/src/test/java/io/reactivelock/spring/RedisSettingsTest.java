package io.reactivelock.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisURI;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;

/** How {@code spring.data.redis.*} becomes Lettuce URIs, for the deployments a test cannot start here (Sentinel). */
class RedisSettingsTest {

    private static RedisSettings settings(Map<String, Object> properties) {
        StandardEnvironment environment = new StandardEnvironment();
        environment.getPropertySources().addFirst(new MapPropertySource("test", properties));
        return RedisSettings.from(environment);
    }

    @Test
    void nothingSetMeansLocalhostOnTheDefaultPort() {
        RedisURI uri = settings(Map.of()).uri();
        assertThat(uri.getHost()).isEqualTo("localhost");
        assertThat(uri.getPort()).isEqualTo(6379);
        assertThat(uri.getSentinels()).isEmpty();
    }

    @Test
    void theUrlWinsOverHostAndPort() {
        RedisURI uri = settings(Map.of("spring.data.redis.url", "rediss://:secret@cache:6380/2",
                "spring.data.redis.host", "ignored", "spring.data.redis.port", "1")).uri();
        assertThat(uri.getHost()).isEqualTo("cache");
        assertThat(uri.getPort()).isEqualTo(6380);
        assertThat(uri.getDatabase()).isEqualTo(2);
        assertThat(uri.isSsl()).isTrue();
        assertThat(uri.getCredentialsProvider().resolveCredentials().block().getPassword()).containsExactly("secret".toCharArray());
    }

    @Test
    void hostPortCredentialsDatabaseSslAndTimeoutAreUsed() {
        RedisURI uri = settings(Map.of("spring.data.redis.host", "db", "spring.data.redis.port", "7000",
                "spring.data.redis.username", "app", "spring.data.redis.password", "pw", "spring.data.redis.database", "4",
                "spring.data.redis.ssl.enabled", "true", "spring.data.redis.timeout", "3s")).uri();
        assertThat(uri.getHost()).isEqualTo("db");
        assertThat(uri.getPort()).isEqualTo(7000);
        assertThat(uri.getDatabase()).isEqualTo(4);
        assertThat(uri.isSsl()).isTrue();
        assertThat(uri.getTimeout()).isEqualTo(Duration.ofSeconds(3));
        assertThat(uri.getCredentialsProvider().resolveCredentials().block().getUsername()).isEqualTo("app");
    }

    @Test
    void aSentinelMasterWinsOverTheUrlAndListsEverySentinel() {
        RedisURI uri = settings(Map.of("spring.data.redis.url", "redis://ignored:1",
                "spring.data.redis.sentinel.master", "mymaster",
                "spring.data.redis.sentinel.nodes", "s1:26379,[::1]:26380",
                "spring.data.redis.sentinel.password", "sentinel-pw",
                "spring.data.redis.password", "data-pw")).uri();
        assertThat(uri.getSentinelMasterId()).isEqualTo("mymaster");
        assertThat(uri.getSentinels()).extracting(RedisURI::getHost, RedisURI::getPort)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("s1", 26379), org.assertj.core.groups.Tuple.tuple("::1", 26380));
        assertThat(uri.getSentinels().get(0).getCredentialsProvider().resolveCredentials().block().getPassword())
                .containsExactly("sentinel-pw".toCharArray());
        assertThat(uri.getCredentialsProvider().resolveCredentials().block().getPassword()).containsExactly("data-pw".toCharArray());
    }

    @Test
    void clusterNodesMakeItACluster() {
        RedisSettings settings = settings(Map.of("spring.data.redis.cluster.nodes", "n1:7000,n2:7001",
                "spring.data.redis.password", "pw"));
        assertThat(settings.isCluster()).isTrue();
        assertThat(settings.clusterNodes()).extracting(RedisURI::getHost, RedisURI::getPort)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("n1", 7000), org.assertj.core.groups.Tuple.tuple("n2", 7001));
        assertThat(settings(Map.of()).isCluster()).isFalse();
    }
}
