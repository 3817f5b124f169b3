package io.reactivelock.testing;

import io.lettuce.core.RedisURI;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;

/**
 * A real Redis for the tests of code that uses the Redis client, in one line:
 *
 * <pre>{@code
 * try (TestRedis redis = TestRedis.start();
 *      ReactiveRedisLock locks = ReactiveRedisLock.create(redis.uri())) {
 *     // ... the code under test, on a real Redis
 * }
 * }</pre>
 *
 * <p>Where it comes from, in this order:
 * <ol>
 *   <li>a container, where Testcontainers ({@code org.testcontainers:testcontainers}, which this
 *       artifact lists as optional: add it to the test class path) finds a Docker engine: the image
 *       {@code REDIS_IMAGE} names, else {@value #DEFAULT_IMAGE};
 *   <li>else a {@code redis-server} on the {@code PATH}, started as a process on a free loopback
 *       port, without persistence;
 *   <li>else none: the test is skipped with the reason when JUnit's {@code opentest4j} is on the class
 *       path (a {@code TestAbortedException}), and fails with {@link IllegalStateException} otherwise.
 * </ol>
 * {@link #close()} stops the server; a process still running when the JVM exits is stopped by a
 * shutdown hook (a JVM killed outright cannot run it).
 */
public final class TestRedis implements AutoCloseable {

    /** The image of the container when {@code REDIS_IMAGE} names none. */
    public static final String DEFAULT_IMAGE = "redis:7.4";

    private static final Duration START_TIMEOUT = Duration.ofSeconds(30);

    private final RedisURI uri;
    private final String source;
    private final Runnable stop;

    private TestRedis(RedisURI uri, String source, Runnable stop) {
        this.uri = uri;
        this.source = source;
        this.stop = stop;
    }

    /**
     * Starts a Redis as the class javadoc says; blocks until it answers (a test's set-up, not a
     * reactive thread).
     */
    public static TestRedis start() {
        if (Containers.available()) {
            return Containers.start(Optional.ofNullable(System.getenv("REDIS_IMAGE")).orElse(DEFAULT_IMAGE));
        }
        Path binary = onPath("redis-server");
        if (binary != null) {
            return process(binary);
        }
        throw unavailable("no Redis for this test: Testcontainers finds no Docker engine"
                + (Containers.onClassPath() ? "" : " (it is not on the test class path)")
                + ", and there is no redis-server on the PATH");
    }

    /** Where this Redis listens, on the loopback interface. */
    public RedisURI uri() {
        return uri;
    }

    /** Stops the server. */
    @Override
    public void close() {
        stop.run();
    }

    @Override
    public String toString() {
        return "TestRedis{" + source + " at " + uri.getHost() + ":" + uri.getPort() + "}";
    }

    private static TestRedis process(Path binary) {
        int port = freePort();
        Process process;
        try {
            process = new ProcessBuilder(binary.toString(), "--port", Integer.toString(port), "--bind", "127.0.0.1",
                    "--save", "", "--appendonly", "no")
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        } catch (IOException e) {
            throw new UncheckedIOException("could not start " + binary, e);
        }
        Thread hook = new Thread(process::destroyForcibly, "test-redis-stop");
        Runtime.getRuntime().addShutdownHook(hook);
        Runnable stop = () -> {
            process.destroyForcibly();
            try {
                process.waitFor();
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (IllegalStateException shuttingDown) {
                // the JVM is exiting: the hook runs anyway
            }
        };
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (!answersPing(port)) {
            if (!process.isAlive() || System.nanoTime() - deadline > 0) {
                stop.run();
                throw new IllegalStateException(binary + " did not answer PING on port " + port + " within " + START_TIMEOUT);
            }
            Thread.onSpinWait();
        }
        return new TestRedis(RedisURI.create("127.0.0.1", port), "redis-server " + binary, stop);
    }

    private static boolean answersPing(int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 200);
            socket.setSoTimeout(1000);
            OutputStream out = socket.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            byte[] reply = in.readNBytes(7);
            return new String(reply, StandardCharsets.US_ASCII).equals("+PONG\r\n");
        } catch (IOException notYet) {
            return false;
        }
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static @Nullable Path onPath(String name) {
        String path = System.getenv("PATH");
        if (path == null) {
            return null;
        }
        return Stream.of(path.split(java.io.File.pathSeparator))
                .filter(dir -> !dir.isEmpty())
                .map(dir -> Path.of(dir, name))
                .filter(file -> Files.isRegularFile(file) && Files.isExecutable(file))
                .findFirst().orElse(null);
    }

    /** The skip a JUnit test understands, where JUnit is there; else a plain failure. */
    private static RuntimeException unavailable(String reason) {
        try {
            Class<?> aborted = Class.forName("org.opentest4j.TestAbortedException");
            return (RuntimeException) aborted.getConstructor(String.class).newInstance(reason);
        } catch (ReflectiveOperationException | LinkageError noJUnit) {
            return new IllegalStateException(reason);
        }
    }

    /** Testcontainers, touched only once it is known to be on the class path. */
    private static final class Containers {

        static boolean onClassPath() {
            try {
                Class.forName("org.testcontainers.DockerClientFactory", false, TestRedis.class.getClassLoader());
                return true;
            } catch (ClassNotFoundException e) {
                return false;
            }
        }

        static boolean available() {
            return onClassPath() && Docker.answers();
        }

        static TestRedis start(String image) {
            return Docker.start(image);
        }
    }

    /** The Testcontainers calls; loaded only when {@link Containers#onClassPath()} is true. */
    private static final class Docker {

        static boolean answers() {
            return org.testcontainers.DockerClientFactory.instance().isDockerAvailable();
        }

        @SuppressWarnings("resource") // stopped by close()
        static TestRedis start(String image) {
            org.testcontainers.containers.GenericContainer<?> container =
                    new org.testcontainers.containers.GenericContainer<>(org.testcontainers.utility.DockerImageName.parse(image)
                            .asCompatibleSubstituteFor("redis"))
                            .withExposedPorts(6379);
            container.start();
            return new TestRedis(RedisURI.create(container.getHost(), container.getMappedPort(6379)),
                    "container of " + image, container::stop);
        }
    }
}
