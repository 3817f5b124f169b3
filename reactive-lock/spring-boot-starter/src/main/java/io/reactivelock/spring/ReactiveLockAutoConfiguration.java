package io.reactivelock.spring;

import io.lettuce.core.RedisClient;
import io.lettuce.core.resource.ClientResources;
import io.micrometer.core.instrument.MeterRegistry;
import io.reactivelock.LockListener;
import io.reactivelock.ReactiveLock;
import io.reactivelock.LeaderElection;
import io.reactivelock.ReactiveMultiLock;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.ReactiveLockClient;
import io.reactivelock.micrometer.LockMetrics;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;
import org.springframework.boot.data.redis.autoconfigure.DataRedisProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Lazy;
import org.springframework.core.env.Environment;

/**
 * A {@link ReactiveRedisLock} bean, unless the application defines a {@link ReactiveLock} of its
 * own. Redis is where Spring Boot says: its {@code DataRedisConnectionDetails} when the application
 * has Spring Boot's Redis support ({@code spring-boot-data-redis}, as {@code spring-boot-starter-data-redis}
 * brings), so that the {@code spring.data.redis.*} properties, a {@code @ServiceConnection} container,
 * Docker Compose and an SSL bundle ({@code spring.data.redis.ssl.bundle}) all reach the lock; and
 * the lock's client then runs on the application's Lettuce {@code ClientResources} (its event
 * loops), not on a second set. Without Spring Boot's Redis support, the {@code spring.data.redis.*}
 * properties are read directly (standalone, Sentinel or Cluster; localhost by default; SSL on or
 * off, no bundle). The options come from the {@link ReactiveLockProperties reactive-lock.*}
 * properties. The lock connects when the context starts, so an unreachable Redis fails the start;
 * {@code reactive-lock.enabled=false} turns the auto-configuration off, and
 * {@code reactive-lock.in-memory=true} (with reactive-lock-test on the class path) gives the
 * in-memory locks instead.
 *
 * <p>With a {@link MeterRegistry} bean and reactive-lock-micrometer on the class path, a
 * {@link LockMetrics} bean feeds it; any single {@link LockListener} bean becomes the lock's listener.
 *
 * <p>The client is a {@link ReactiveLockClient}: inject it for a semaphore
 * ({@code client.semaphore(capacity)}); a {@link ReactiveReadWriteLock}, a {@link ReactiveMultiLock}
 * and a {@link LeaderElection} are beans too, all views on the client's one pair of connections, so
 * they run wherever the lock does (standalone, Sentinel or Cluster).
 */
@AutoConfiguration(afterName = {
        "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration"})
@ConditionalOnClass(RedisClient.class)
@ConditionalOnBooleanProperty(name = "reactive-lock.enabled", matchIfMissing = true)
@EnableConfigurationProperties(ReactiveLockProperties.class)
public class ReactiveLockAutoConfiguration {

    /**
     * Where Spring Boot's Redis support says Redis is, on its Lettuce client resources; destroyed
     * after the lock, which depends on it, and before the resources.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails")
    static class FromConnectionDetails {

        @Bean(destroyMethod = "close")
        @ConditionalOnMissingBean({ReactiveLock.class, RedisLockConnection.class})
        @ConditionalOnBean(DataRedisConnectionDetails.class)
        RedisLockConnection reactiveLockRedisConnection(DataRedisConnectionDetails details,
                ObjectProvider<DataRedisProperties> properties, ObjectProvider<ClientResources> clientResources) {
            return DataRedisTarget.connect(details, properties.getIfAvailable(), clientResources.getIfUnique());
        }
    }

    /** Without Spring Boot's Redis support: the {@code spring.data.redis.*} properties, read here. */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean({ReactiveLock.class, RedisLockConnection.class})
    RedisLockConnection reactiveLockRedisConnectionFromProperties(Environment environment) {
        return RedisLockConnection.of(RedisSettings.from(environment));
    }

    /**
     * The client: connects at start-up (blocking, on the main thread), closed on shutdown. It is the
     * application's {@link ReactiveLock} and hands out every other primitive over its one pair of
     * connections.
     */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(ReactiveLock.class)
    ReactiveRedisLock reactiveRedisLock(RedisLockConnection reactiveLockRedisConnection,
            ReactiveLockProperties properties, ObjectProvider<LockListener> listener) {
        return reactiveLockRedisConnection.lock(properties.toOptions(listener.getIfUnique(() -> LockListener.NONE)));
    }

    /** The client's read-write lock: a view on its connections. */
    @Bean
    @ConditionalOnBean(ReactiveLockClient.class)
    @ConditionalOnMissingBean(ReactiveReadWriteLock.class)
    ReactiveReadWriteLock reactiveReadWriteLock(ReactiveLockClient client) {
        return client.readWriteLock();
    }

    /** The client's multi-lock (its names exclude the lock's): a view on its connections. */
    @Bean
    @ConditionalOnBean(ReactiveLockClient.class)
    @ConditionalOnMissingBean(ReactiveMultiLock.class)
    ReactiveMultiLock reactiveMultiLock(ReactiveLockClient client) {
        return client.multiLock();
    }

    /** Leader election on the application's {@link ReactiveLock}, whichever it is. */
    @Bean
    @Lazy
    @ConditionalOnBean(ReactiveLock.class)
    @ConditionalOnMissingBean(LeaderElection.class)
    LeaderElection leaderElection(ReactiveLock lock) {
        return LeaderElection.of(lock);
    }

    /** Lock metrics, when the application has reactive-lock-micrometer and a registry. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass({MeterRegistry.class, LockMetrics.class})
    static class Metrics {

        @Bean
        @ConditionalOnBean(MeterRegistry.class)
        @ConditionalOnMissingBean(LockMetrics.class)
        LockMetrics reactiveLockMetrics(MeterRegistry registry, ReactiveLockProperties properties) {
            return new LockMetrics(registry, properties.getMetrics().isTagLockNames());
        }
    }
}
