package io.reactivelock.spring;

import io.lettuce.core.RedisURI;
import io.lettuce.core.SslOptions;
import io.lettuce.core.resource.ClientResources;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;
import org.springframework.boot.data.redis.autoconfigure.DataRedisProperties;
import org.springframework.boot.ssl.SslBundle;

/**
 * Where Redis is as Spring Boot resolved it ({@link DataRedisConnectionDetails}: from the
 * {@code spring.data.redis.*} properties, a {@code @ServiceConnection} container, Docker Compose),
 * its SSL bundle, and the timeout and client name of {@link DataRedisProperties}, as the lock's
 * Lettuce URIs and SSL options. Precedence as Spring Boot's own Lettuce configuration: cluster, then
 * Sentinel, then standalone. A static master/replica set is refused: the lock writes, and needs
 * the primary.
 */
final class DataRedisTarget {

    private DataRedisTarget() {
    }

    static RedisLockConnection connect(DataRedisConnectionDetails details, @Nullable DataRedisProperties properties,
            @Nullable ClientResources resources) {
        SslBundle bundle = details.getSslBundle();
        boolean ssl = bundle != null || (properties != null && properties.getSsl().isEnabled());
        @Nullable SslOptions sslOptions = bundle == null ? null : sslOptions(bundle);
        DataRedisConnectionDetails.Cluster cluster = details.getCluster();
        if (cluster != null) {
            List<RedisURI> nodes = new ArrayList<>();
            for (DataRedisConnectionDetails.Node node : cluster.getNodes()) {
                nodes.add(common(RedisURI.builder().withHost(node.host()).withPort(node.port()), details, properties, ssl).build());
            }
            return RedisLockConnection.cluster(nodes, sslOptions, resources);
        }
        if (details.getMasterReplica() != null) {
            throw new IllegalStateException("reactive-lock runs on a standalone Redis, Sentinel or a Cluster, not on a static"
                    + " master/replica set (spring.data.redis.masterreplica.nodes): its locks are written to the primary");
        }
        DataRedisConnectionDetails.Sentinel sentinel = details.getSentinel();
        if (sentinel != null) {
            RedisURI.Builder builder = RedisURI.builder().withSentinelMasterId(sentinel.getMaster()).withDatabase(sentinel.getDatabase());
            for (DataRedisConnectionDetails.Node node : sentinel.getNodes()) {
                RedisURI.Builder one = RedisURI.builder().withHost(node.host()).withPort(node.port()).withSsl(ssl);
                if (sentinel.getPassword() != null) {
                    one = sentinel.getUsername() != null
                            ? one.withAuthentication(sentinel.getUsername(), sentinel.getPassword().toCharArray())
                            : one.withPassword(sentinel.getPassword().toCharArray());
                }
                builder.withSentinel(one.build());
            }
            return RedisLockConnection.standalone(common(builder, details, properties, ssl).build(), sslOptions, resources);
        }
        DataRedisConnectionDetails.Standalone standalone = details.getStandalone();
        RedisURI.Builder builder = RedisURI.builder().withHost(standalone.getHost()).withPort(standalone.getPort())
                .withDatabase(standalone.getDatabase());
        return RedisLockConnection.standalone(common(builder, details, properties, ssl).build(), sslOptions, resources);
    }

    private static RedisURI.Builder common(RedisURI.Builder builder, DataRedisConnectionDetails details,
            @Nullable DataRedisProperties properties, boolean ssl) {
        String password = details.getPassword();
        if (password != null) {
            builder = details.getUsername() != null
                    ? builder.withAuthentication(details.getUsername(), password.toCharArray())
                    : builder.withPassword(password.toCharArray());
        }
        builder.withSsl(ssl);
        if (properties != null) {
            Duration timeout = properties.getTimeout();
            if (timeout != null) {
                builder.withTimeout(timeout);
            }
            if (properties.getClientName() != null) {
                builder.withClientName(properties.getClientName());
            }
        }
        return builder;
    }

    /** The bundle's key and trust managers, protocols and ciphers, as Spring Boot's Lettuce configuration applies them. */
    private static SslOptions sslOptions(SslBundle bundle) {
        SslOptions.Builder options = SslOptions.builder().jdkSslProvider()
                .keyManager(bundle.getManagers().getKeyManagerFactory())
                .trustManager(bundle.getManagers().getTrustManagerFactory());
        org.springframework.boot.ssl.SslOptions bundleOptions = bundle.getOptions();
        if (bundleOptions.getEnabledProtocols() != null) {
            options.protocols(bundleOptions.getEnabledProtocols());
        }
        if (bundleOptions.getCiphers() != null) {
            options.cipherSuites(bundleOptions.getCiphers());
        }
        return options.build();
    }
}
