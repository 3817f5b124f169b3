package io.reactivelock.spring;

import io.reactivelock.LockListener;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.ReactiveMultiLock;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.ReactiveSemaphore;
import io.reactivelock.testing.InMemoryReactiveLock;
import io.reactivelock.testing.InMemoryReactiveMultiLock;
import io.reactivelock.testing.InMemoryReactiveReadWriteLock;
import io.reactivelock.testing.InMemoryReactiveSemaphore;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * With {@code reactive-lock.in-memory=true} and reactive-lock-test on the class path (a test's), the
 * in-memory lock, semaphore, read-write lock and multi-lock of one JVM, on the
 * {@link ReactiveLockProperties reactive-lock.*} options, instead of Redis: nothing connects, so a
 * {@code @SpringBootTest} starts without a Redis, in one line:
 * {@code @SpringBootTest(properties = "reactive-lock.in-memory=true")}. Each bean backs off for one of
 * the application's own.
 */
@AutoConfiguration(before = ReactiveLockAutoConfiguration.class)
@ConditionalOnClass(InMemoryReactiveLock.class)
@ConditionalOnBooleanProperty(name = "reactive-lock.enabled", matchIfMissing = true)
@ConditionalOnBooleanProperty("reactive-lock.in-memory")
@EnableConfigurationProperties(ReactiveLockProperties.class)
public class ReactiveLockInMemoryAutoConfiguration {

    private static LockOptions options(ReactiveLockProperties properties, ObjectProvider<LockListener> listener) {
        return properties.toOptions(listener.getIfUnique(() -> LockListener.NONE));
    }

    @Bean
    @ConditionalOnMissingBean(ReactiveLock.class)
    InMemoryReactiveLock inMemoryReactiveLock(ReactiveLockProperties properties, ObjectProvider<LockListener> listener) {
        return InMemoryReactiveLock.create(options(properties, listener));
    }

    @Bean
    @ConditionalOnMissingBean(ReactiveSemaphore.class)
    InMemoryReactiveSemaphore inMemoryReactiveSemaphore(ReactiveLockProperties properties, ObjectProvider<LockListener> listener) {
        return InMemoryReactiveSemaphore.create(options(properties, listener));
    }

    @Bean
    @ConditionalOnMissingBean(ReactiveReadWriteLock.class)
    InMemoryReactiveReadWriteLock inMemoryReactiveReadWriteLock(ReactiveLockProperties properties, ObjectProvider<LockListener> listener) {
        return InMemoryReactiveReadWriteLock.create(options(properties, listener));
    }

    @Bean
    @ConditionalOnMissingBean(ReactiveMultiLock.class)
    InMemoryReactiveMultiLock inMemoryReactiveMultiLock(ReactiveLockProperties properties, ObjectProvider<LockListener> listener) {
        return InMemoryReactiveMultiLock.create(options(properties, listener));
    }
}
