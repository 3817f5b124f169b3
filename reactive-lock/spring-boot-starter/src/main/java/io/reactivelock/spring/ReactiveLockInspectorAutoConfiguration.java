package io.reactivelock.spring;

import io.reactivelock.LockListener;
import io.reactivelock.inspect.InspectorOptions;
import io.reactivelock.inspect.LockInspector;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Lazy;

/**
 * A {@link LockInspector} of the auto-configured lock's Redis and key prefix, made (with its own
 * connection) only when something needs it, and with Spring Boot Actuator the {@code locks}
 * endpoint, available when exposed like any other. Force-release, on the inspector and as the
 * endpoint's {@code DELETE}, only with {@code reactive-lock.inspector.force-release-enabled=true}.
 */
@AutoConfiguration(after = ReactiveLockAutoConfiguration.class)
@ConditionalOnBean(RedisLockConnection.class)
@EnableConfigurationProperties(InspectorProperties.class)
public class ReactiveLockInspectorAutoConfiguration {

    /** Connects when first injected (blocking, at start-up); closed on shutdown. */
    @Bean(destroyMethod = "close")
    @Lazy
    @ConditionalOnMissingBean(LockInspector.class)
    LockInspector lockInspector(RedisLockConnection reactiveLockRedisConnection, ReactiveLockProperties properties,
            InspectorProperties inspectorProperties, ObjectProvider<LockListener> listener) {
        InspectorOptions options = InspectorOptions.of(properties.toOptions(listener.getIfUnique(() -> LockListener.NONE)));
        return reactiveLockRedisConnection.inspector(inspectorProperties.isForceReleaseEnabled()
                ? options.withForceReleaseEnabled()
                : options);
    }

    /** The endpoint, when Actuator is present and the endpoint exposed; with a DELETE when the inspector may force-release. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.actuate.endpoint.annotation.Endpoint")
    @ConditionalOnAvailableEndpoint(endpoint = LocksEndpoint.class)
    static class LocksEndpointConfiguration {

        @Bean
        @ConditionalOnMissingBean(LocksEndpoint.class)
        LocksEndpoint locksEndpoint(LockInspector lockInspector) {
            return lockInspector.options().forceReleaseEnabled()
                    ? new ForceReleasingLocksEndpoint(lockInspector)
                    : new LocksEndpoint(lockInspector);
        }
    }
}
