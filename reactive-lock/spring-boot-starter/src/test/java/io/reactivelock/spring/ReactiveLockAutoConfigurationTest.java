package io.reactivelock.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisConnectionException;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import io.reactivelock.LockLease;
import io.reactivelock.LockOptions;
import io.reactivelock.LockClosedException;
import io.reactivelock.ReactiveLock;
import io.reactivelock.testing.InMemoryReactiveLock;
import io.reactivelock.LeaderElection;
import io.reactivelock.Leadership;
import io.reactivelock.ReactiveMultiLock;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.ReactiveLockClient;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.micrometer.LockMetrics;
import io.reactivelock.micrometer.ObservedReactiveLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * The auto-configuration in an application context, against a real Redis: the lock connects at
 * start-up (an unreachable Redis fails the start), so every context here has a server to reach.
 */
@WithRedis
class ReactiveLockAutoConfigurationTest {

    private static final Duration TTL = Duration.ofSeconds(30);

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(ReactiveLockAutoConfiguration.class,
                    ReactiveLockObservationAutoConfiguration.class, ReactiveLockFairAutoConfiguration.class));
    private RedisServer redis;

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
    }

    private String url() {
        return "redis://" + redis.host() + ":" + redis.port();
    }

    /** Takes and releases {@code name}; the fencing record it leaves shows which Redis and prefix were used. */
    private static void lockOnce(ReactiveLock lock, String name) {
        StepVerifier.create(lock.withLock(name, TTL, (Function<LockLease, Mono<Long>>) lease -> Mono.just(lease.fencingToken())))
                .assertNext(fence -> assertThat(fence).isPositive())
                .verifyComplete();
    }

    @Test
    void theLockUsesTheRedisThatSpringDataRedisUrlNames() {
        runner.withPropertyValues("spring.data.redis.url=" + url()).run(context -> {
            assertThat(context).hasSingleBean(ReactiveRedisLock.class);
            lockOnce(context.getBean(ReactiveRedisLock.class), "a");
            assertThat(redis.call("EXISTS", "lock:{a}:fence")).isEqualTo("1");
        });
    }

    @Test
    void theLockUsesTheRedisThatSpringDataRedisHostAndPortName() {
        runner.withPropertyValues("spring.data.redis.host=" + redis.host(), "spring.data.redis.port=" + redis.port(),
                "spring.data.redis.database=3").run(context -> {
                    lockOnce(context.getBean(ReactiveRedisLock.class), "a");
                    assertThat(redis.call("EXISTS", "lock:{a}:fence")).as("not in database 0").isEqualTo("0");
                    assertThat(redis.callList("EVAL", "redis.call('SELECT', 3) return redis.call('KEYS', '*')", "0"))
                            .contains("lock:{a}:fence");
                });
    }

    @Test
    void reactiveLockPropertiesBecomeTheLockOptions() {
        runner.withPropertyValues("spring.data.redis.url=" + url(), "reactive-lock.key-prefix=shop-locks",
                "reactive-lock.acquire-timeout=3s", "reactive-lock.min-backoff=2ms", "reactive-lock.max-backoff=50ms",
                "reactive-lock.max-lease-time=1m", "reactive-lock.command-timeout=500ms", "reactive-lock.close-timeout=700ms",
                "reactive-lock.replica-acknowledgement=0", "reactive-lock.replica-ack-timeout=300ms", "reactive-lock.fair=true")
                .run(context -> {
                    LockOptions options = context.getBean(ReactiveRedisLock.class).options();
                    assertThat(options.keyPrefix()).isEqualTo("shop-locks");
                    assertThat(options.acquireTimeout()).isEqualTo(Duration.ofSeconds(3));
                    assertThat(options.minBackoff()).isEqualTo(Duration.ofMillis(2));
                    assertThat(options.maxBackoff()).isEqualTo(Duration.ofMillis(50));
                    assertThat(options.maxLeaseTime()).isEqualTo(Duration.ofMinutes(1));
                    assertThat(options.commandTimeout()).isEqualTo(Duration.ofMillis(500));
                    assertThat(options.closeTimeout()).isEqualTo(Duration.ofMillis(700));
                    assertThat(options.replicaAcknowledgement()).isZero();
                    assertThat(options.replicaAckTimeout()).isEqualTo(Duration.ofMillis(300));
                    ReactiveRedisLock client = context.getBean(ReactiveRedisLock.class);
                    assertThat(context.getBean(ReactiveLock.class)).as("the injected lock is the client's fair lock")
                            .isNotSameAs(client).hasToString(client.fair().toString());
                    lockOnce(context.getBean(ReactiveLock.class), "a");
                    assertThat(redis.call("EXISTS", "shop-locks:{a}:fence")).isEqualTo("1");
                });
    }

    @Test
    void aBadPropertyFailsTheStart() {
        runner.withPropertyValues("spring.data.redis.url=" + url(), "reactive-lock.key-prefix={braces}")
                .run(context -> assertThat(context).hasFailed()
                        .getFailure().rootCause().hasMessageContaining("keyPrefix must not contain"));
    }

    @Test
    void durableGrantsOnAServerThatCannotMakeThemFailTheStart() {
        // The build's Redis (6.2, or a 7.x started without appendonly): no WAITAOF, or no AOF to wait for.
        runner.withPropertyValues("spring.data.redis.url=" + url(), "reactive-lock.durable-grants=true")
                .run(context -> assertThat(context).hasFailed()
                        .getFailure().hasStackTraceContaining(
                                "IllegalStateException: durable grants (LockOptions.durableGrants(true)) cannot be made"));
    }

    @Test
    void theDefaultsAreThoseOfLockOptions() {
        runner.withPropertyValues("spring.data.redis.url=" + url()).run(context ->
                assertThat(context.getBean(ReactiveRedisLock.class).options()).hasToString(LockOptions.defaults().toString()));
    }

    @Test
    void anApplicationLockBeanMakesItBackOffWithoutConnecting() {
        runner.withUserConfiguration(OwnLock.class)
                .withPropertyValues("spring.data.redis.port=" + closedPort())
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(ReactiveLock.class).doesNotHaveBean(ReactiveRedisLock.class);
                    assertThat(context.getBean(ReactiveLock.class)).isSameAs(OwnLock.LOCK);
                });
    }

    @Test
    void anUnreachableRedisFailsTheStart() {
        runner.withPropertyValues("spring.data.redis.port=" + closedPort(), "spring.data.redis.host=127.0.0.1")
                .run(context -> {
                    assertThat(context).hasFailed();
                    List<Throwable> causes = new ArrayList<>();
                    for (Throwable e = context.getStartupFailure(); e != null; e = e.getCause()) {
                        causes.add(e);
                    }
                    assertThat(causes).hasAtLeastOneElementOfType(RedisConnectionException.class);
                });
    }

    @Test
    void closingTheContextClosesTheLock() {
        List<ReactiveRedisLock> locks = new ArrayList<>();
        runner.withPropertyValues("spring.data.redis.url=" + url())
                .run(context -> locks.add(context.getBean(ReactiveRedisLock.class)));
        StepVerifier.create(locks.get(0).withLock("a", TTL, Mono.just(1)))
                .verifyErrorSatisfies(e -> assertThat(e).isInstanceOf(LockClosedException.class).hasMessageContaining("closed"));
    }

    @Test
    void withAMeterRegistryTheLockIsMeasured() {
        runner.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .withPropertyValues("spring.data.redis.url=" + url(), "reactive-lock.metrics.tag-lock-names=true")
                .run(context -> {
                    assertThat(context).hasSingleBean(LockMetrics.class);
                    assertThat(context.getBean(ReactiveRedisLock.class).options().listener()).isSameAs(context.getBean(LockMetrics.class));
                    lockOnce(context.getBean(ReactiveRedisLock.class), "sale:1");
                    MeterRegistry registry = context.getBean(MeterRegistry.class);
                    assertThat(registry.get(LockMetrics.ACQUIRE).tags("outcome", "acquired", "lock", "sale:1").timer().count()).isEqualTo(1);
                    assertThat(registry.get(LockMetrics.HELD).timer().count()).isEqualTo(1);
                });
    }

    @Test
    void theOtherPrimitivesAreMadeOnTheSameRedisWhenAskedForAndMeasuredAsTheirKind() {
        runner.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .withPropertyValues("spring.data.redis.url=" + url())
                .run(context -> {
                    StepVerifier.create(context.getBean(ReactiveLockClient.class).semaphore(2).withPermits("s", 1, TTL, Mono.just("permit")))
                            .expectNext("permit").verifyComplete();
                    StepVerifier.create(context.getBean(ReactiveReadWriteLock.class).withReadLock("r", TTL, Mono.just("read")))
                            .expectNext("read").verifyComplete();
                    StepVerifier.create(context.getBean(ReactiveMultiLock.class).withLocks(java.util.List.of("m1", "m2"), TTL,
                            Mono.just("both"))).expectNext("both").verifyComplete();
                    StepVerifier.create(context.getBean(LeaderElection.class).lead("leader", TTL).take(1))
                            .assertNext(term -> assertThat(term.state()).isEqualTo(Leadership.State.ELECTED))
                            .verifyComplete();
                    MeterRegistry registry = context.getBean(MeterRegistry.class);
                    assertThat(registry.get(LockMetrics.ACQUIRE).timers())
                            .extracting(timer -> timer.getId().getTag("primitive"))
                            .contains("semaphore", "read-write-lock", "multi-lock", "lock");
                    assertThat(redis.call("EXISTS", "lock:{m1}:fence")).as("the multi-lock used the lock's Redis").isEqualTo("1");
                });
    }

    @Test
    void withoutAMeterRegistryThereAreNoMetrics() {
        runner.withPropertyValues("spring.data.redis.url=" + url()).run(context -> {
            assertThat(context).doesNotHaveBean(LockMetrics.class);
            assertThat(context.getBean(ReactiveRedisLock.class).options().listener()).isSameAs(io.reactivelock.LockListener.NONE);
        });
    }

    @Test
    void withAnObservationRegistryTheInjectedReactiveLockIsObserved() {
        runner.withBean(ObservationRegistry.class, TestObservationRegistry::create)
                .withPropertyValues("spring.data.redis.url=" + url())
                .run(context -> {
                    assertThat(context.getBean(ReactiveLock.class)).isInstanceOf(ObservedReactiveLock.class);
                    assertThat(context).hasSingleBean(ReactiveRedisLock.class);
                    lockOnce(context.getBean(ReactiveLock.class), "a");
                    TestObservationRegistryAssert.assertThat((TestObservationRegistry) context.getBean(ObservationRegistry.class))
                            .hasSingleObservationThat().hasNameEqualTo(ObservedReactiveLock.NAME).hasBeenStopped();
                });
    }

    @Test
    void withoutMicrometerOnTheClasspathTheLockWorksUnobserved() {
        runner.withClassLoader(new FilteredClassLoader("io.micrometer"))
                .withPropertyValues("spring.data.redis.url=" + url())
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(ReactiveLock.class).doesNotHaveBean("reactiveLockMetrics");
                    assertThat(context.getBean(ReactiveLock.class)).isInstanceOf(ReactiveRedisLock.class);
                    lockOnce(context.getBean(ReactiveLock.class), "a");
                });
    }

    @Test
    void withMicrometerButWithoutReactiveLockMicrometerTheLockWorksUnmeasuredAndUnobserved() {
        // An application with Actuator (registries) that did not add reactive-lock-micrometer.
        runner.withClassLoader(new FilteredClassLoader("io.reactivelock.micrometer"))
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .withBean(ObservationRegistry.class, TestObservationRegistry::create)
                .withPropertyValues("spring.data.redis.url=" + url())
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(ReactiveLock.class).doesNotHaveBean("reactiveLockMetrics");
                    assertThat(context.getBean(ReactiveLock.class)).isInstanceOf(ReactiveRedisLock.class);
                    lockOnce(context.getBean(ReactiveLock.class), "a");
                });
    }

    @Test
    void aClusterNamedBySpringDataRedisClusterNodesIsUsed() {
        try (RedisServer node = RedisServer.start("--cluster-enabled", "yes")) {
            String[] addSlots = new String[2 + 16384];
            addSlots[0] = "CLUSTER";
            addSlots[1] = "ADDSLOTS";
            for (int slot = 0; slot < 16384; slot++) {
                addSlots[2 + slot] = Integer.toString(slot);
            }
            node.call(addSlots);
            await().pollInterval(Duration.ofMillis(20)).until(() -> node.call("CLUSTER", "INFO").contains("cluster_state:ok"));

            runner.withPropertyValues("spring.data.redis.cluster.nodes=" + node.host() + ":" + node.port()).run(context -> {
                lockOnce(context.getBean(ReactiveRedisLock.class), "a");
                assertThat(node.call("EXISTS", "lock:{a}:fence")).isEqualTo("1");
                // Before the one client, these two refused to start on a Cluster.
                StepVerifier.create(context.getBean(ReactiveLockClient.class).semaphore(2).withPermits("s", 1, TTL, Mono.just("permit")))
                        .expectNext("permit").verifyComplete();
                StepVerifier.create(context.getBean(ReactiveReadWriteLock.class).withWriteLock("r", TTL, Mono.just("written")))
                        .expectNext("written").verifyComplete();
            });
        }
    }

    /** A port nothing listens on (it was free a moment ago). */
    private static int closedPort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnLock {
        static final ReactiveLock LOCK = InMemoryReactiveLock.create();

        @Bean
        ReactiveLock ownLock() {
            return LOCK;
        }
    }
}
