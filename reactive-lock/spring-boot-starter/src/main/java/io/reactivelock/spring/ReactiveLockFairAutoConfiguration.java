package io.reactivelock.spring;

import io.reactivelock.ReactiveLock;
import io.reactivelock.redis.ReactiveRedisLock;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;

/**
 * With {@code reactive-lock.fair=true}, the {@link ReactiveLock} to inject is the client's fair
 * lock; when lock observations are on, {@link ReactiveLockObservationAutoConfiguration} already made
 * that fair lock the observed primary one, and this backs off.
 */
@AutoConfiguration(after = {ReactiveLockAutoConfiguration.class, ReactiveLockObservationAutoConfiguration.class})
@ConditionalOnBean(ReactiveRedisLock.class)
@ConditionalOnProperty(prefix = "reactive-lock", name = "fair", havingValue = "true")
public class ReactiveLockFairAutoConfiguration {

    @Bean
    @Primary
    @ConditionalOnMissingBean(type = "io.reactivelock.micrometer.ObservedReactiveLock")
    ReactiveLock reactiveFairLock(ReactiveRedisLock reactiveRedisLock) {
        return reactiveRedisLock.fair();
    }
}
