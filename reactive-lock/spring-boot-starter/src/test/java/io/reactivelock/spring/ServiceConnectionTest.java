package io.reactivelock.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.LockLease;
import io.reactivelock.ReactiveLock;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;
import org.springframework.boot.data.redis.autoconfigure.DataRedisReactiveAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.testcontainers.service.connection.ServiceConnection;
import org.springframework.data.redis.core.ReactiveStringRedisTemplate;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;
import org.testcontainers.utility.DockerImageName;
import reactor.core.publisher.Mono;

/**
 * A Spring Boot test that starts Redis with Testcontainers and {@code @ServiceConnection}, as a user's
 * does: the lock and Spring Data Redis both talk to the container (what the lock writes, the
 * application's template reads), although the properties still say {@code localhost:6379}, where
 * nothing listens. The image is {@code REDIS_IMAGE} ({@code .ci/docker-up} builds one locally) or the
 * official {@code redis:7.4}. Skipped, with Testcontainers' reason, where no Docker engine answers.
 */
@SpringBootTest(properties = "spring.data.redis.port=6379")
@Testcontainers(disabledWithoutDocker = true)
class ServiceConnectionTest {

    private static final PrintStream JVM_STDERR = new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8);
    private static final Duration TTL = Duration.ofSeconds(30);

    @Container
    @ServiceConnection(name = "redis")
    static final GenericContainer<?> REDIS = new GenericContainer<>(
            DockerImageName.parse(System.getenv().getOrDefault("REDIS_IMAGE", "redis:7.4"))).withExposedPorts(6379);

    @SpringBootConfiguration
    @ImportAutoConfiguration({DataRedisAutoConfiguration.class, DataRedisReactiveAutoConfiguration.class,
            ReactiveLockAutoConfiguration.class})
    static class Application {
    }

    @Autowired
    private ReactiveLock lock;

    @Autowired
    private ReactiveStringRedisTemplate template;

    @Autowired
    private DataRedisConnectionDetails details;

    @Test
    void theLockAndSpringDataRedisTalkToTheSameContainer() {
        int containers = DockerClientFactory.instance().client().listContainersCmd().exec().size();
        JVM_STDERR.println("[container] " + containers + " container(s) running; @ServiceConnection's: image "
                + REDIS.getDockerImageName() + ", " + REDIS.getHost() + ":" + REDIS.getMappedPort(6379)
                + "; connection details: " + details.getClass().getSimpleName() + " " + details.getStandalone().getHost()
                + ":" + details.getStandalone().getPort());
        assertThat(details.getStandalone().getPort()).as("the container's port, not the properties'")
                .isEqualTo(REDIS.getMappedPort(6379));

        // Spring Data Redis connects its shared connection on first use, blocking: on the test thread,
        // not in the lock's body, which runs on a Lettuce event loop where BlockHound reports it.
        assertThat(template.hasKey("warm-up").block(TTL)).isFalse();
        String seenByTemplate = lock.withLock("order:42", TTL, (Function<LockLease, Mono<String>>) lease ->
                        template.opsForValue().get("lock:{order:42}").map(value -> value.equals(lease.token()) ? "the lease's token" : value))
                .block(TTL);

        assertThat(seenByTemplate).isEqualTo("the lease's token");
        assertThat(template.hasKey("lock:{order:42}").block(TTL)).as("released").isFalse();
        assertThat(template.opsForValue().get("lock:{order:42}:fence").block(TTL)).isNotNull();
    }
}
