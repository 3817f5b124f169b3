package io.reactivelock.support;

import io.lettuce.core.RedisURI;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Collectors;

/**
 * One real Redis server for tests, on a port of its own.
 *
 * <p>{@link #start} launches a local {@code redis-server} process or, where a Docker engine is reachable,
 * a {@code redis:7.4} container. The system property {@code redis.provider} chooses: {@code process},
 * {@code container} or {@code auto} (the default). The process runs the binary named by the system
 * property {@code redis.server} or environment variable {@code REDIS_SERVER}, else {@code redis-server}
 * from the {@code PATH}, else the one for this platform in the embedded-redis jar on the class path.
 *
 * <p>Every method blocks: call them from the test thread or another thread that may block, never from
 * inside a reactive pipeline. Closing is the normal way to end a server; a process that is still running
 * when the JVM exits is killed by a shutdown hook.
 */
public abstract sealed class RedisServer implements AutoCloseable permits ProcessRedisServer, ContainerRedisServer {

    static final String LOOPBACK = "127.0.0.1";
    static final Duration START_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(10);

    private final String password;

    RedisServer(List<String> extraArgs) {
        int at = extraArgs.lastIndexOf("--requirepass");
        this.password = at >= 0 && at + 1 < extraArgs.size() ? extraArgs.get(at + 1) : null;
    }

    /** Starts a server with the default configuration: no persistence, no protected mode. */
    public static RedisServer start() {
        return start(new String[0]);
    }

    /**
     * Starts a server with extra {@code redis-server} arguments, such as {@code "--maxmemory", "1mb"} or
     * {@code "--requirepass", "secret"} (which {@link #uri()} and {@link #call} then use). They must not
     * set {@code --port}, {@code --bind} or {@code --dir}, which the harness owns.
     */
    public static RedisServer start(String... extraArgs) {
        List<String> args = List.of(extraArgs);
        String provider = System.getProperty("redis.provider", "auto");
        return switch (provider) {
            case "process" -> ProcessRedisServer.start(args);
            case "container" -> ContainerRedisServer.start(args);
            case "auto" -> Docker.AVAILABLE ? ContainerRedisServer.start(args) : ProcessRedisServer.start(args);
            default -> throw new IllegalArgumentException("redis.provider must be process, container or auto, not " + provider);
        };
    }

    /** The host to connect to. */
    public abstract String host();

    /** The port, which stays the same across {@link #restart()}. */
    public abstract int port();

    /** The Lettuce URI of this server, with its password if it has one. */
    public RedisURI uri() {
        RedisURI.Builder uri = RedisURI.builder().withHost(host()).withPort(port());
        if (password != null) {
            uri.withPassword(password.toCharArray());
        }
        return uri.build();
    }

    /** The process id of the server as last started (for a container, its main process on the Docker host). */
    public abstract long pid();

    /** Shuts the server down gracefully (resuming it first if paused) and waits until it has exited. */
    public abstract void stop();

    /** Kills the server abruptly, as a crash would, and waits until it has exited. */
    public abstract void kill();

    /** Stops the server if it is running, then starts it again on the same port with an empty dataset. */
    public abstract void restart();

    /** Freezes the server: connections are still accepted but nothing is answered until {@link #resume()}. */
    public abstract void pause();

    /** Unfreezes a paused server; does nothing otherwise. */
    public abstract void resume();

    /** Whether the server is alive (paused counts as alive). */
    public abstract boolean isRunning();

    /** Whether the server is alive but paused. */
    public abstract boolean isPaused();

    /** Stops the server, killing it if it does not stop within 5 s, and removes its files; idempotent. */
    @Override
    public abstract void close();

    /**
     * Runs one command on a fresh connection and renders the reply: strings as they are, integers in
     * decimal, nil as {@code null}, arrays as their elements' renderings joined by {@code "\n"} (a nil
     * element as {@code "(nil)"}).
     *
     * @throws IllegalStateException with Redis' message when Redis replies with an error
     * @throws UncheckedIOException when Redis cannot be reached or does not answer within 10 s
     */
    public String call(String... command) {
        Object reply = send(command);
        return reply == null ? null : render(reply);
    }

    /**
     * Runs one command whose reply is an array, returning its elements: {@code String}, {@code Long},
     * {@code null} or nested {@code List<Object>}; {@code null} for a nil array.
     *
     * @throws IllegalStateException when Redis replies with an error or with something other than an array
     * @throws UncheckedIOException when Redis cannot be reached or does not answer within 10 s
     */
    public List<Object> callList(String... command) {
        Object reply = send(command);
        if (reply == null) {
            return null;
        }
        if (!(reply instanceof List<?> items)) {
            throw new IllegalStateException(command[0] + " replied " + reply + ", not an array");
        }
        return Collections.unmodifiableList(items);
    }

    /** Whether the server answers {@code PING} within {@code timeout}; false if refused or silent. */
    public boolean ping(Duration timeout) {
        try {
            return "PONG".equals(Resp.call(host(), port(), password, timeout, "PING"));
        } catch (IOException unreachableOrSilent) {
            return false;
        }
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + host() + ":" + port() + "]";
    }

    private Object send(String... command) {
        try {
            return Resp.call(host(), port(), password, CALL_TIMEOUT, command);
        } catch (IOException e) {
            throw new UncheckedIOException("no reply to " + command[0] + " from Redis at " + host() + ":" + port(), e);
        }
    }

    private static String render(Object reply) {
        if (reply instanceof List<?> items) {
            return items.stream()
                    .map(item -> item == null ? "(nil)" : render(item))
                    .collect(Collectors.joining("\n"));
        }
        return reply.toString();
    }

    /**
     * A port that is free on the loopback interface, chosen below the ephemeral ranges (Linux 32768+,
     * macOS and Windows 49152+): while a server is down, a client reconnecting to it could otherwise be
     * given the server's own port as its local port, connect to itself and keep the port from the restart.
     */
    static int freePort() {
        for (int attempt = 0; attempt < 100; attempt++) {
            int port = ThreadLocalRandom.current().nextInt(20_000, 32_768);
            if (isFree(port)) {
                return port;
            }
        }
        throw new IllegalStateException("no free port found in 20000-32767");
    }

    private static boolean isFree(int port) {
        try (ServerSocket probe = new ServerSocket()) {
            probe.bind(new InetSocketAddress(LOOPBACK, port));
            return true;
        } catch (IOException taken) {
            return false;
        }
    }

    /** Asked once per JVM; Testcontainers answers at once when no Docker engine is reachable. */
    private static final class Docker {

        static final boolean AVAILABLE = available();

        private static boolean available() {
            try {
                return ContainerRedisServer.dockerAvailable();
            } catch (NoClassDefFoundError noTestcontainers) {
                // Users of the test-jar (the benchmarks) need not have Testcontainers on their class path.
                return false;
            }
        }
    }
}
