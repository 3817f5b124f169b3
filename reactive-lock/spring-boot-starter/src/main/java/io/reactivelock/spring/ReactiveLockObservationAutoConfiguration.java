package io.reactivelock.spring;

import io.micrometer.observation.ObservationRegistry;
import io.reactivelock.ReactiveLock;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.micrometer.ObservedReactiveLock;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;

/**
 * With an {@link ObservationRegistry} bean and reactive-lock-micrometer on the class path, the
 * primary {@link ReactiveLock} is an {@link ObservedReactiveLock} around the
 * {@link ReactiveRedisLock} bean (its fair lock with {@code reactive-lock.fair=true}), so that injecting {@code ReactiveLock} gives traced locks;
 * {@code ReactiveRedisLock} still injects the plain one.
 */
@AutoConfiguration(after = ReactiveLockAutoConfiguration.class,
        afterName = "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration")
@ConditionalOnClass({ObservationRegistry.class, ObservedReactiveLock.class})
@ConditionalOnBean({ObservationRegistry.class, ReactiveRedisLock.class})
public class ReactiveLockObservationAutoConfiguration {

    @Bean
    @Primary
    @ConditionalOnMissingBean(ObservedReactiveLock.class)
    ObservedReactiveLock observedReactiveLock(ReactiveRedisLock reactiveRedisLock, ReactiveLockProperties properties,
            ObservationRegistry registry) {
        return new ObservedReactiveLock(properties.isFair() ? reactiveRedisLock.fair() : reactiveRedisLock, registry);
    }
}
