package io.reactivelock.spring;

import io.reactivelock.LockListener;
import io.reactivelock.ReactiveLock;
import io.reactivelock.testing.InMemoryReactiveLock;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * With {@code reactive-lock.in-memory=true} and reactive-lock-test on the class path (a test's), the
 * in-memory client of one JVM (every primitive on one keyspace), on the
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

    /**
     * The in-memory client: the application's {@link ReactiveLock} and {@link io.reactivelock.ReactiveLockClient},
     * from which the read-write lock and multi-lock beans of {@link ReactiveLockAutoConfiguration} are made.
     */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(ReactiveLock.class)
    InMemoryReactiveLock inMemoryReactiveLock(ReactiveLockProperties properties, ObjectProvider<LockListener> listener) {
        return InMemoryReactiveLock.create(properties.toOptions(listener.getIfUnique(() -> LockListener.NONE)));
    }
}
