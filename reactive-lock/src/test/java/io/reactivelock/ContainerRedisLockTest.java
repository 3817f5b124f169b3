package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;
import org.testcontainers.utility.DockerImageName;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import io.reactivelock.redis.ReactiveRedisLock;

/**
 * The lock on Redis in a container, started the way a user's test starts it: Testcontainers'
 * {@link GenericContainer} with port 6379 exposed, managed by its JUnit extension. The image is
 * {@code REDIS_IMAGE} ({@code .ci/docker-up} builds one locally, since no registry is reachable here)
 * or the official {@code redis:7.4}. Skipped, with Testcontainers' reason, where no Docker engine answers.
 */
@Testcontainers(disabledWithoutDocker = true)
class ContainerRedisLockTest {

    private static final PrintStream JVM_STDERR = new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8);
    private static final String IMAGE = System.getenv().getOrDefault("REDIS_IMAGE", "redis:7.4");

    @Container
    private static final GenericContainer<?> REDIS = new GenericContainer<>(DockerImageName.parse(IMAGE)).withExposedPorts(6379);

    @Test
    void twoClientsOnTheContainerTakeTurnsAndTheKeyIsInTheContainersRedis() {
        int running = DockerClientFactory.instance().client().listContainersCmd().exec().size();
        JVM_STDERR.println("[container] " + running + " container(s) running; this test's: " + REDIS.getContainerId()
                + " of image " + REDIS.getDockerImageName() + " on " + REDIS.getHost() + ":" + REDIS.getMappedPort(6379));
        RedisURI uri = RedisURI.create(REDIS.getHost(), REDIS.getMappedPort(6379));
        RedisClient client = RedisClient.create(uri);
        List<String> order = new CopyOnWriteArrayList<>();
        try (ReactiveRedisLock first = ReactiveRedisLock.create(uri, LockOptions.defaults());
                ReactiveRedisLock second = ReactiveRedisLock.create(uri, LockOptions.defaults());
                StatefulRedisConnection<String, String> probe = client.connect()) {
            String keyWhileHeld = first.withLock("job", Duration.ofSeconds(30), lease ->
                            Mono.fromCallable(() -> probe.sync().get("lock:{job}")).subscribeOn(Schedulers.boundedElastic())
                                    .map(value -> value.equals(lease.token()) ? "held by this lease" : "other: " + value))
                    .block(Duration.ofSeconds(30));
            assertThat(keyWhileHeld).isEqualTo("held by this lease");

            Flux.merge(first.withLock("shared", Duration.ofSeconds(30), Mono.fromRunnable(() -> order.add("first"))
                                    .then(Mono.fromRunnable(() -> order.add("first done")))),
                            second.withLock("shared", Duration.ofSeconds(30), Mono.fromRunnable(() -> order.add("second"))
                                    .then(Mono.fromRunnable(() -> order.add("second done")))))
                    .then().block(Duration.ofSeconds(30));
            assertThat(probe.sync().exists("lock:{job}", "lock:{shared}")).as("released").isZero();
            assertThat(probe.sync().info("server")).contains("redis_version:");
        } finally {
            client.shutdown();
        }
        assertThat(order).hasSize(4);
        assertThat(order.indexOf("first done")).as("no overlap").isEqualTo(order.indexOf("first") + 1);
        assertThat(order.indexOf("second done")).isEqualTo(order.indexOf("second") + 1);
    }
}
