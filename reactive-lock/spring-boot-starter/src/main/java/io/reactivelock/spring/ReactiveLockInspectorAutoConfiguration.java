package io.reactivelock.spring;

import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.inspect.LockInspector;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * A {@link LockInspector} of the auto-configured client's Redis and key prefix, on its connection, and with Spring Boot Actuator the {@code locks}
 * endpoint, available when exposed like any other. Force-release, on the inspector and as the
 * endpoint's {@code DELETE}, only with {@code reactive-lock.inspector.force-release-enabled=true}.
 */
@AutoConfiguration(after = ReactiveLockAutoConfiguration.class)
@ConditionalOnBean(ReactiveRedisLock.class)
@EnableConfigurationProperties(InspectorProperties.class)
public class ReactiveLockInspectorAutoConfiguration {

    /** The client's inspector, on its command connection. */
    @Bean
    @ConditionalOnMissingBean(LockInspector.class)
    LockInspector lockInspector(ReactiveRedisLock reactiveRedisLock, InspectorProperties inspectorProperties) {
        LockInspector inspector = reactiveRedisLock.inspector();
        return inspectorProperties.isForceReleaseEnabled() ? inspector.withForceReleaseEnabled() : inspector;
    }

    /** The endpoint, when Actuator is present and the endpoint exposed; with a DELETE when the inspector may force-release. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.actuate.endpoint.annotation.Endpoint")
    @ConditionalOnAvailableEndpoint(endpoint = LocksEndpoint.class)
    static class LocksEndpointConfiguration {

        @Bean
        @ConditionalOnMissingBean(LocksEndpoint.class)
        LocksEndpoint locksEndpoint(LockInspector lockInspector) {
            return lockInspector.forceReleaseEnabled()
                    ? new ForceReleasingLocksEndpoint(lockInspector)
                    : new LocksEndpoint(lockInspector);
        }
    }
}
