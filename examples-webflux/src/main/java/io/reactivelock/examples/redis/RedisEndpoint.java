package io.reactivelock.examples.redis;

import io.lettuce.core.RedisURI;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The Redis the app uses: the one {@code REDIS_URL} names, or an embedded redis-server this app
 * started (and stops when it closes).
 */
public final class RedisEndpoint implements AutoCloseable {

    private final RedisURI uri;
    private final @Nullable EmbeddedRedisServer embedded;

    private RedisEndpoint(RedisURI uri, @Nullable EmbeddedRedisServer embedded) {
        this.uri = Objects.requireNonNull(uri, "uri");
        this.embedded = embedded;
    }

    /** A Redis started and stopped by someone else. */
    public static RedisEndpoint external(String url) {
        return new RedisEndpoint(RedisURI.create(url), null);
    }

    /** Starts an embedded redis-server on 127.0.0.1 and a free port; blocks until it is ready. */
    public static RedisEndpoint startEmbedded() {
        EmbeddedRedisServer server = EmbeddedRedisServer.start();
        return new RedisEndpoint(RedisURI.create(server.url()), server);
    }

    public RedisURI uri() {
        return uri;
    }

    /** The embedded server, or null when the app uses an external Redis. */
    public @Nullable EmbeddedRedisServer embeddedServer() {
        return embedded;
    }

    /** Stops the embedded server, if this app started one. */
    @Override
    public void close() {
        if (embedded != null) {
            embedded.close();
        }
    }

    /** Host and port only: never the password a URL may carry. */
    @Override
    public String toString() {
        String where = "redis://" + uri.getHost() + ":" + uri.getPort() + (uri.getDatabase() != 0 ? "/" + uri.getDatabase() : "");
        return embedded != null
                ? where + " (embedded redis-server, pid " + embedded.pid() + ", stopped on shutdown)"
                : where + " (external, from configuration)";
    }
}
