package io.reactivelock.examples.redis;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real {@code redis-server} process on {@code 127.0.0.1} and a free port, for running the example
 * without installing Redis. Not for production: there you set {@code REDIS_URL}.
 *
 * <p>The binary comes from the {@code com.github.codemonstur:embedded-redis} jar on the classpath
 * (a Maven Central artifact that carries redis-server builds as resources). Only the binary is
 * used, not that library's Java code: it is copied to a temporary directory and started with
 * {@link ProcessBuilder}. Nothing is persisted ({@code save ""}, no AOF).
 *
 * <p>{@link #start()} blocks until the server logs that it accepts connections; call it at
 * start-up, never on a reactive thread. {@link #close()} stops the process and waits for it.
 */
public final class EmbeddedRedisServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(EmbeddedRedisServer.class);

    private static final String READY = "Ready to accept connections";
    private static final int START_ATTEMPTS = 5;
    private static final Duration KILL_ON_EXIT_GRACE = Duration.ofSeconds(10);

    private final Process process;
    private final int port;
    private final Path directory;
    private final Thread killOnExit;
    private final CountDownLatch closed = new CountDownLatch(1);

    private EmbeddedRedisServer(Process process, int port, Path directory) {
        this.process = process;
        this.port = port;
        this.directory = directory;
        // A safety net for a JVM that exits without closing this server (System.exit with a hung
        // shutdown, a test runner giving up on its JVM): redis-server would outlive it. The hook
        // first gives the app's own shutdown (running at the same time) the chance to close it in
        // order, so that requests still in flight during a graceful shutdown keep their Redis.
        this.killOnExit = new Thread(() -> {
            try {
                if (!closed.await(KILL_ON_EXIT_GRACE.toMillis(), TimeUnit.MILLISECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
            }
        }, "embedded-redis-" + port + "-kill-on-exit");
        Runtime.getRuntime().addShutdownHook(killOnExit);
    }

    /** Starts a redis-server on 127.0.0.1 and a free port; blocks until it is ready. */
    public static EmbeddedRedisServer start() {
        Path directory;
        Path executable;
        try {
            directory = Files.createTempDirectory("embedded-redis-");
            executable = extractBinary(directory);
        } catch (IOException e) {
            throw new UncheckedIOException("Could not prepare the embedded redis-server", e);
        }
        IllegalStateException failure = new IllegalStateException("Could not start the embedded redis-server");
        // A free port is only known to be free when we look; another process may take it before
        // redis binds it. Then redis exits at once, and we try again with another port.
        for (int attempt = 1; attempt <= START_ATTEMPTS; attempt++) {
            int port = freePort();
            try {
                Process process = launch(executable, directory, port, failure);
                if (process != null) {
                    return new EmbeddedRedisServer(process, port, directory);
                }
            } catch (IOException e) {
                failure.addSuppressed(e);
                break;
            }
        }
        deleteRecursively(directory);
        throw failure;
    }

    /** The port redis-server listens on, on 127.0.0.1. */
    public int port() {
        return port;
    }

    /** {@code redis://127.0.0.1:<port>}. */
    public String url() {
        return "redis://127.0.0.1:" + port;
    }

    /** Whether the redis-server process is running. */
    public boolean isRunning() {
        return process.isAlive();
    }

    /** The redis-server process id, for logs. */
    public long pid() {
        return process.pid();
    }

    /** Stops redis-server (SIGTERM, then SIGKILL after 10 s) and waits for it to exit. */
    @Override
    public void close() {
        try {
            Runtime.getRuntime().removeShutdownHook(killOnExit);
        } catch (IllegalStateException e) {
            // the JVM is shutting down already; the hook will run too, harmlessly
        }
        if (process.isAlive()) {
            process.destroy();
            try {
                if (!process.waitFor(10, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
            log.info("Stopped the embedded redis-server on 127.0.0.1:{} (pid {})", port, process.pid());
        }
        deleteRecursively(directory);
        closed.countDown();
    }

    @Override
    public String toString() {
        return "embedded redis-server on " + url() + " (pid " + process.pid() + ")";
    }

    /** Starts one redis-server; returns null when it exited before being ready (port taken). */
    private static Process launch(Path executable, Path directory, int port, IllegalStateException failure)
            throws IOException {
        List<String> command = List.of(executable.toString(),
                "--port", Integer.toString(port),
                "--bind", "127.0.0.1",
                "--protected-mode", "yes",
                "--save", "",
                "--appendonly", "no",
                "--dir", directory.toString(),
                "--loglevel", "notice");
        Process process = new ProcessBuilder(command).directory(directory.toFile()).redirectErrorStream(true).start();
        BufferedReader output = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        List<String> lines = new ArrayList<>();
        String line;
        while ((line = output.readLine()) != null) {
            lines.add(line);
            if (line.contains(READY)) {
                drainInBackground(output, port);
                return process;
            }
        }
        // The output ended: redis-server exited (typically "Address already in use").
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        process.destroyForcibly();
        failure.addSuppressed(new IllegalStateException("redis-server on port " + port + " exited: "
                + String.join(System.lineSeparator(), lines)));
        return null;
    }

    /** Keeps reading the server's output so that it never blocks on a full pipe. */
    private static void drainInBackground(BufferedReader output, int port) {
        Thread drain = new Thread(() -> {
            try (output) {
                String line;
                while ((line = output.readLine()) != null) {
                    log.debug("redis-server:{} {}", port, line);
                }
            } catch (IOException ignored) {
                // the process ended
            }
        }, "embedded-redis-" + port + "-output");
        drain.setDaemon(true);
        drain.start();
    }

    private static Path extractBinary(Path directory) throws IOException {
        String resource = binaryResource();
        Path executable = directory.resolve("redis-server");
        try (InputStream in = EmbeddedRedisServer.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new IOException("Resource " + resource + " not found: is com.github.codemonstur:embedded-redis "
                        + "on the classpath?");
            }
            Files.copy(in, executable, StandardCopyOption.REPLACE_EXISTING);
        }
        if (!executable.toFile().setExecutable(true, true)) {
            throw new IOException("Could not make " + executable + " executable");
        }
        return executable;
    }

    /** The redis-server build in embedded-redis 1.4.4 for this machine. */
    private static String binaryResource() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        boolean x64 = arch.equals("amd64") || arch.equals("x86_64");
        boolean arm64 = arch.equals("aarch64") || arch.equals("arm64");
        if (os.contains("linux") && x64) {
            return "redis-server-6.2.6-v5-linux-amd64";
        }
        if (os.contains("linux") && arm64) {
            return "redis-server-6.2.7-linux-arm64";
        }
        if (os.contains("mac") && x64) {
            return "redis-server-6.2.6-v5-darwin-amd64";
        }
        if (os.contains("mac") && arm64) {
            return "redis-server-6.2.6-v5-darwin-arm64";
        }
        throw new IllegalStateException("No embedded redis-server for " + os + "/" + arch
                + "; start Redis yourself and set REDIS_URL");
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("Could not find a free port", e);
        }
    }

    private static void deleteRecursively(Path directory) {
        try (Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            log.debug("Could not delete {}", directory, e);
        }
    }
}
