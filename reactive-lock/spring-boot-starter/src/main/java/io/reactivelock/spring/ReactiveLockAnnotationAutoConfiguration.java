package io.reactivelock.spring;

import io.reactivelock.ReactiveLock;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * {@link WithLock} methods run under the application's {@link ReactiveLock} bean (the
 * auto-configured one, or the application's own), unless
 * {@code reactive-lock.annotations.enabled=false}. Needs Spring AOP (a dependency of
 * {@code spring-context}), not AspectJ.
 */
@AutoConfiguration(after = {ReactiveLockAutoConfiguration.class, ReactiveLockObservationAutoConfiguration.class})
@ConditionalOnClass(name = "org.springframework.aop.framework.autoproxy.AbstractBeanFactoryAwareAdvisingPostProcessor")
@ConditionalOnBooleanProperty(name = "reactive-lock.annotations.enabled", matchIfMissing = true)
@EnableConfigurationProperties(AnnotationProperties.class)
public class ReactiveLockAnnotationAutoConfiguration {

    /** Static: a post-processor is made before the other beans, and the lock is looked up only when first needed. */
    @Bean
    static WithLockBeanPostProcessor withLockBeanPostProcessor(ObjectProvider<ReactiveLock> locks) {
        return new WithLockBeanPostProcessor(locks);
    }
}
