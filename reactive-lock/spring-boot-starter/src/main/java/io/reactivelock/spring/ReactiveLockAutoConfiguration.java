package io.reactivelock.spring;

import io.lettuce.core.RedisClient;
import io.micrometer.core.instrument.MeterRegistry;
import io.reactivelock.LockListener;
import io.reactivelock.ReactiveLock;
import io.reactivelock.LeaderElection;
import io.reactivelock.ReactiveMultiLock;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.redis.ReactiveRedisMultiLock;
import io.reactivelock.redis.ReactiveRedisReadWriteLock;
import io.reactivelock.redis.ReactiveRedisSemaphore;
import io.reactivelock.ReactiveSemaphore;
import io.reactivelock.micrometer.LockMetrics;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Lazy;
import org.springframework.core.env.Environment;

/**
 * A {@link ReactiveRedisLock} bean, unless the application defines a {@link ReactiveLock} of its
 * own. Redis is where {@code spring.data.redis.*} says (standalone, Sentinel or Cluster; localhost
 * by default); the options come from the {@link ReactiveLockProperties reactive-lock.*}
 * properties. The lock connects when the context starts, so an unreachable Redis fails the start.
 *
 * <p>With a {@link MeterRegistry} bean and reactive-lock-micrometer on the class path, a
 * {@link LockMetrics} bean feeds it; any single {@link LockListener} bean becomes the lock's listener.
 *
 * <p>A {@link ReactiveSemaphore}, {@link ReactiveReadWriteLock} and {@link ReactiveMultiLock} on the
 * same Redis and options, and a {@link LeaderElection} on the lock, are made when something
 * injects them (each primitive opens its own two connections).
 */
@AutoConfiguration(afterName = {
        "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration"})
@ConditionalOnClass(RedisClient.class)
@EnableConfigurationProperties(ReactiveLockProperties.class)
public class ReactiveLockAutoConfiguration {

    /** The client is destroyed after the lock, which depends on it. */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(ReactiveLock.class)
    RedisLockConnection reactiveLockRedisConnection(Environment environment) {
        return RedisLockConnection.of(RedisSettings.from(environment));
    }

    /** Connects at start-up (blocking, on the main thread); closed on shutdown. */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(ReactiveLock.class)
    ReactiveRedisLock reactiveRedisLock(RedisLockConnection reactiveLockRedisConnection,
            ReactiveLockProperties properties, ObjectProvider<LockListener> listener) {
        return reactiveLockRedisConnection.lock(properties.toOptions(listener.getIfUnique(() -> LockListener.NONE)));
    }

    /**
     * A semaphore on the same Redis and options, made (and connected) only when something asks for
     * it; the beans of the other primitives below likewise. Each reports to the lock's listener as
     * its own {@linkplain io.reactivelock.Primitive kind}.
     */
    @Bean(destroyMethod = "close")
    @Lazy
    @ConditionalOnBean(RedisLockConnection.class)
    @ConditionalOnMissingBean(ReactiveSemaphore.class)
    ReactiveRedisSemaphore reactiveRedisSemaphore(RedisLockConnection reactiveLockRedisConnection, ReactiveRedisLock reactiveRedisLock) {
        return reactiveLockRedisConnection.semaphore(reactiveRedisLock.options());
    }

    /** A read-write lock on the same Redis and options, made when something asks for it. */
    @Bean(destroyMethod = "close")
    @Lazy
    @ConditionalOnBean(RedisLockConnection.class)
    @ConditionalOnMissingBean(ReactiveReadWriteLock.class)
    ReactiveRedisReadWriteLock reactiveRedisReadWriteLock(RedisLockConnection reactiveLockRedisConnection,
            ReactiveRedisLock reactiveRedisLock) {
        return reactiveLockRedisConnection.readWriteLock(reactiveRedisLock.options());
    }

    /** A multi-lock on the same Redis and options (its names exclude the lock's), made when something asks for it. */
    @Bean(destroyMethod = "close")
    @Lazy
    @ConditionalOnBean(RedisLockConnection.class)
    @ConditionalOnMissingBean(ReactiveMultiLock.class)
    ReactiveRedisMultiLock reactiveRedisMultiLock(RedisLockConnection reactiveLockRedisConnection,
            ReactiveRedisLock reactiveRedisLock) {
        return reactiveLockRedisConnection.multiLock(reactiveRedisLock.options());
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
