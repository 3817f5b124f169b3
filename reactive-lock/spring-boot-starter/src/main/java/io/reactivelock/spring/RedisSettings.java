package io.reactivelock.spring;

import io.lettuce.core.RedisURI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.Environment;

/**
 * The application's {@code spring.data.redis.*} settings that say where Redis is, read from the
 * {@link Environment} (so that Spring Data Redis need not be on the classpath) and turned into
 * Lettuce {@link RedisURI}s. Precedence as in Spring Boot: cluster nodes, then a Sentinel master,
 * then {@code url}, then host and port.
 */
record RedisSettings(@Nullable String url, @Nullable String host, @Nullable Integer port,
        @Nullable String username, @Nullable String password, @Nullable Integer database,
        @Nullable Duration timeout, @Nullable String clientName, @Nullable Ssl ssl,
        @Nullable Sentinel sentinel, @Nullable Cluster cluster) {

    record Ssl(boolean enabled) {}

    record Sentinel(@Nullable String master, @Nullable List<String> nodes, @Nullable String username,
            @Nullable String password) {}

    record Cluster(@Nullable List<String> nodes) {}

    static RedisSettings from(Environment environment) {
        return Binder.get(environment).bind("spring.data.redis", RedisSettings.class)
                .orElseGet(() -> new RedisSettings(null, null, null, null, null, null, null, null, null, null, null));
    }

    boolean isCluster() {
        return cluster != null && cluster.nodes() != null && !cluster.nodes().isEmpty();
    }

    /** The cluster's seed nodes; only when {@link #isCluster()}. */
    List<RedisURI> clusterNodes() {
        List<RedisURI> nodes = new ArrayList<>();
        for (String node : cluster.nodes()) {
            HostAndPort where = HostAndPort.parse(node);
            nodes.add(credentials(RedisURI.builder().withHost(where.host()).withPort(where.port())).build());
        }
        return nodes;
    }

    /** The standalone server or the Sentinel-managed master. */
    RedisURI uri() {
        if (sentinel != null && sentinel.master() != null && !sentinel.master().isBlank()) {
            RedisURI.Builder builder = RedisURI.builder().withSentinelMasterId(sentinel.master());
            for (String node : sentinel.nodes() == null ? List.<String>of() : sentinel.nodes()) {
                HostAndPort where = HostAndPort.parse(node);
                RedisURI.Builder one = RedisURI.builder().withHost(where.host()).withPort(where.port());
                if (sentinel.password() != null) {
                    one.withAuthentication(sentinel.username() != null ? sentinel.username() : "default",
                            sentinel.password());
                }
                builder.withSentinel(one.build());
            }
            return credentials(builder).build();
        }
        if (url != null && !url.isBlank()) {
            RedisURI uri = RedisURI.create(url);
            if (ssl != null && ssl.enabled()) {
                uri.setSsl(true);
            }
            if (timeout != null) {
                uri.setTimeout(timeout);
            }
            if (clientName != null) {
                uri.setClientName(clientName);
            }
            return uri;
        }
        RedisURI.Builder builder = RedisURI.builder()
                .withHost(host != null ? host : "localhost")
                .withPort(port != null ? port : RedisURI.DEFAULT_REDIS_PORT);
        return credentials(builder).build();
    }

    private RedisURI.Builder credentials(RedisURI.Builder builder) {
        if (password != null) {
            if (username != null) {
                builder.withAuthentication(username, password);
            } else {
                builder.withPassword(password.toCharArray());
            }
        }
        if (database != null && !isCluster()) {
            builder.withDatabase(database);
        }
        if (ssl != null && ssl.enabled()) {
            builder.withSsl(true);
        }
        if (timeout != null) {
            builder.withTimeout(timeout);
        }
        if (clientName != null) {
            builder.withClientName(clientName);
        }
        return builder;
    }

    private record HostAndPort(String host, int port) {

        /** {@code host:port}, or {@code [v6-address]:port}. */
        static HostAndPort parse(String node) {
            int colon = node.lastIndexOf(':');
            if (colon <= 0 || colon == node.length() - 1) {
                throw new IllegalArgumentException("Redis node '" + node + "' is not host:port");
            }
            String host = node.substring(0, colon);
            if (host.startsWith("[") && host.endsWith("]")) {
                host = host.substring(1, host.length() - 1);
            }
            return new HostAndPort(host, Integer.parseInt(node.substring(colon + 1)));
        }
    }
}
