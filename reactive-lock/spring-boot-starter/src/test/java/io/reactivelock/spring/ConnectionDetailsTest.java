package io.reactivelock.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.resource.ClientResources;
import io.reactivelock.LeaderElection;
import io.reactivelock.LockLease;
import io.reactivelock.ReactiveLock;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.ReactiveLockClient;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import io.reactivelock.testing.InMemoryReactiveLock;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;
import org.springframework.boot.data.redis.autoconfigure.DataRedisReactiveAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.data.redis.core.ReactiveStringRedisTemplate;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * With Spring Boot's Redis support, the lock goes where its {@link DataRedisConnectionDetails} bean
 * says (not where the properties say, when the two differ: a {@code @ServiceConnection} or Docker
 * Compose replaces the properties' bean with its own), on the application's Lettuce
 * {@link ClientResources}; {@code reactive-lock.enabled=false} and {@code reactive-lock.in-memory=true}
 * let an application start without Redis.
 */
@WithRedis
class ConnectionDetailsTest {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Pattern EVENT_LOOP = Pattern.compile("lettuce-\\w*EventLoop-(\\d+)-\\d+");

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class, DataRedisReactiveAutoConfiguration.class,
                    ReactiveLockInMemoryAutoConfiguration.class, ReactiveLockAutoConfiguration.class,
                    ReactiveLockInspectorAutoConfiguration.class));
    private RedisServer redis;

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
    }

    private static String fenceOf(ReactiveLock lock, String name) {
        return lock.withLock(name, TTL, (Function<LockLease, Mono<String>>) lease -> Mono.just(Long.toString(lease.fencingToken())))
                .block(TTL);
    }

    /** The event-loop groups the application's Lettuce threads belong to (one per ClientResources). */
    static Set<String> eventLoopGroups() {
        return Thread.getAllStackTraces().keySet().stream().map(Thread::getName).map(EVENT_LOOP::matcher)
                .filter(Matcher::matches).map(m -> m.group(1)).collect(Collectors.toCollection(HashSet::new));
    }

    static long lettuceThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().startsWith("lettuce-")).count();
    }

    @Test
    void theLockGoesWhereTheConnectionDetailsBeanSaysNotWhereThePropertiesSay() {
        DataRedisConnectionDetails details = new DataRedisConnectionDetails() {
            @Override
            public Standalone getStandalone() {
                return Standalone.of(redis.host(), redis.port());
            }
        };
        // Nothing listens on port 1: a lock that read the properties could not start.
        runner.withPropertyValues("spring.data.redis.host=127.0.0.1", "spring.data.redis.port=1")
                .withBean(DataRedisConnectionDetails.class, () -> details)
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(ReactiveRedisLock.class);
                    String fence = fenceOf(context.getBean(ReactiveRedisLock.class), "a");
                    assertThat(redis.call("GET", "lock:{a}:fence")).isEqualTo(fence);
                });
    }

    @Test
    void theLockAndSpringDataRedisShareOneSetOfLettuceEventLoops() {
        Set<String> groupsBefore = eventLoopGroups();
        runner.withPropertyValues("spring.data.redis.host=" + redis.host(), "spring.data.redis.port=" + redis.port())
                .run(context -> {
                    ReactiveStringRedisTemplate template = context.getBean(ReactiveStringRedisTemplate.class);
                    String fence = fenceOf(context.getBean(ReactiveRedisLock.class), "shared");
                    assertThat(template.opsForValue().get("lock:{shared}:fence").block(TTL)).isEqualTo(fence);
                    Set<String> groups = eventLoopGroups();
                    groups.removeAll(groupsBefore);
                    System.err.println("[threads] Lettuce threads in this JVM with the lock and Spring Data Redis running: "
                            + lettuceThreads() + "; event-loop groups started by this context: " + groups);
                    assertThat(context.getBean(RedisLockConnection.class).clientResources().eventLoopGroupProvider())
                            .as("the lock's event loops").isSameAs(context.getBean(ClientResources.class).eventLoopGroupProvider());
                    assertThat(groups).as("event-loop groups this context started").hasSize(1);
                });
    }

    @Test
    void withTheStarterTurnedOffNothingConnectsAndNoLockBeanIsMade() {
        runner.withPropertyValues("reactive-lock.enabled=false", "spring.data.redis.port=1")
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(ReactiveLock.class)
                        .doesNotHaveBean(RedisLockConnection.class).doesNotHaveBean(LeaderElection.class));
    }

    @Test
    void inMemoryGivesTheInMemoryLocksAndStartsWithoutRedis() {
        runner.withPropertyValues("reactive-lock.in-memory=true", "spring.data.redis.port=1")
                .run(context -> {
                    assertThat(context).hasNotFailed().doesNotHaveBean(RedisLockConnection.class);
                    assertThat(context.getBean(ReactiveLock.class)).isInstanceOf(InMemoryReactiveLock.class);
                    assertThat(context.getBean(ReactiveLockClient.class)).isSameAs(context.getBean(ReactiveLock.class));
                    StepVerifier.create(context.getBean(ReactiveLock.class).withLock("a", TTL, Mono.just("ran")))
                            .expectNext("ran").verifyComplete();
                    StepVerifier.create(context.getBean(ReactiveLockClient.class).semaphore(2).withPermit("s", TTL, Mono.just("permit")))
                            .expectNext("permit").verifyComplete();
                    StepVerifier.create(context.getBean(ReactiveReadWriteLock.class).withReadLock("r", TTL, Mono.just("read")))
                            .expectNext("read").verifyComplete();
                });
    }
}
