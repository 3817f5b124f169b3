package io.reactivelock.examples.redis;

import java.io.BufferedReader;
import java.io.File;
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
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
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
 * <p>redis-server runs under a small {@code sh} script that stops it, and removes its directory,
 * when this JVM lets go of the script's standard input: when {@link #close()} closes it, or when
 * the JVM ends in any way, a {@code kill -9} included, since the system then closes it. On Linux
 * the script starts in a session of its own ({@code setsid}, from util-linux), so the Ctrl-C that
 * a terminal sends to the whole foreground process group reaches the app but not redis-server:
 * the app shuts down with its Redis still there, and stops it last. Elsewhere redis-server stays
 * in the app's process group and a Ctrl-C stops it at once.
 *
 * <p>{@link #start()} blocks until the server logs that it accepts connections; call it at
 * start-up, never on a reactive thread. {@link #close()} stops the process and waits for it.
 */
public final class EmbeddedRedisServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(EmbeddedRedisServer.class);

    private static final String READY = "Ready to accept connections";
    private static final int START_ATTEMPTS = 5;
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);

    /**
     * Arguments: the server's directory, then the redis-server command. The script hands its copy
     * of the output pipe over to redis-server alone, so the JVM reads the end of the output as soon
     * as redis-server exits; then it waits for its standard input to end.
     */
    private static final String WATCH = """
            dir=$1
            shift
            "$@" &
            server=$!
            exec >/dev/null 2>&1
            read -r ignored
            kill "$server"
            wait "$server"
            rm -rf -- "$dir"
            """;

    private final Process watch;
    private final ProcessHandle server;
    private final int port;
    private final Path directory;

    private EmbeddedRedisServer(Process watch, ProcessHandle server, int port, Path directory) {
        this.watch = watch;
        this.server = server;
        this.port = port;
        this.directory = directory;
    }

    /** Starts a redis-server on 127.0.0.1 and a free port; blocks until it is ready. */
    public static EmbeddedRedisServer start() {
        IllegalStateException failure = new IllegalStateException("Could not start the embedded redis-server");
        // A free port is only known to be free when we look; another process may take it before
        // redis binds it. Then redis exits at once, its script removes its directory, and we try
        // again with another port in a new one.
        for (int attempt = 1; attempt <= START_ATTEMPTS; attempt++) {
            try {
                EmbeddedRedisServer server = launch(freePort(), failure);
                if (server != null) {
                    return server;
                }
            } catch (IOException e) {
                failure.addSuppressed(e);
                break;
            }
        }
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
        return server.isAlive();
    }

    /** The redis-server process id, for logs. */
    public long pid() {
        return server.pid();
    }

    /** Stops redis-server (SIGTERM, then SIGKILL after 10 s), waits for it and removes its directory. */
    @Override
    public void close() {
        boolean wasRunning = server.isAlive();
        try {
            watch.getOutputStream().close(); // the script's cue
            if (!watch.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                server.destroyForcibly();
                watch.destroyForcibly().waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            }
        } catch (IOException e) {
            server.destroyForcibly();
            watch.destroyForcibly();
        } catch (InterruptedException e) {
            server.destroyForcibly();
            watch.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        deleteRecursively(directory); // normally gone already, removed by the script
        if (wasRunning) {
            log.info("Stopped the embedded redis-server on 127.0.0.1:{} (pid {})", port, server.pid());
        }
    }

    @Override
    public String toString() {
        return "embedded redis-server on " + url() + " (pid " + server.pid() + ")";
    }

    /** Starts one redis-server in a new directory; returns null when it exited before being ready (port taken). */
    private static @Nullable EmbeddedRedisServer launch(int port, IllegalStateException failure) throws IOException {
        Path directory = Files.createTempDirectory("embedded-redis-");
        Path executable;
        try {
            executable = extractBinary(directory);
        } catch (IOException e) {
            deleteRecursively(directory);
            throw e;
        }
        List<String> command = new ArrayList<>();
        setsid().ifPresent(command::add); // never forks here: a child of the JVM is not a group leader
        command.addAll(List.of("/bin/sh", "-c", WATCH, "embedded-redis-watch", directory.toString(),
                executable.toString(),
                "--port", Integer.toString(port),
                "--bind", "127.0.0.1",
                "--protected-mode", "yes",
                "--save", "",
                "--appendonly", "no",
                "--dir", directory.toString(),
                "--loglevel", "notice"));
        Process watch = new ProcessBuilder(command).directory(directory.toFile()).redirectErrorStream(true).start();
        BufferedReader output = new BufferedReader(new InputStreamReader(watch.getInputStream(), StandardCharsets.UTF_8));
        List<String> lines = new ArrayList<>();
        String line;
        while ((line = output.readLine()) != null) {
            lines.add(line);
            if (line.contains(READY)) {
                drainInBackground(output, port);
                ProcessHandle server = watch.children().findFirst()
                        .orElseThrow(() -> new IOException("redis-server is ready but not a child of its script"));
                return new EmbeddedRedisServer(watch, server, port, directory);
            }
        }
        // The output ended: redis-server exited (typically "Address already in use").
        watch.getOutputStream().close();
        try {
            watch.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        watch.destroyForcibly();
        deleteRecursively(directory);
        failure.addSuppressed(new IllegalStateException("redis-server on port " + port + " exited: "
                + String.join(System.lineSeparator(), lines)));
        return null;
    }

    /** util-linux's {@code setsid} on the {@code PATH} (every Linux distribution has it), if any. */
    private static Optional<String> setsid() {
        return Stream.of(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator))
                .filter(dir -> !dir.isEmpty())
                .map(dir -> Path.of(dir, "setsid"))
                .filter(Files::isExecutable)
                .findFirst()
                .map(Path::toString);
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
        if (!Files.exists(directory)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            log.debug("Could not delete {}", directory, e);
        }
    }
}
