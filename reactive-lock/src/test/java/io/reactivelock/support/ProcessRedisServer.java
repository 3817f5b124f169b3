package io.reactivelock.support;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.ProcessBuilder.Redirect;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/** A {@code redis-server} child process on 127.0.0.1, with a private temporary directory for its files and log. */
final class ProcessRedisServer extends RedisServer {

    private static final Duration READY_PING_TIMEOUT = Duration.ofSeconds(1);
    private static final Duration POLL_INTERVAL = Duration.ofMillis(10);
    private static final Duration EXIT_TIMEOUT = Duration.ofSeconds(5);
    private static final int PORT_ATTEMPTS = 5;
    private static final int LOG_TAIL_LINES = 30;

    /** Processes not yet seen to exit: the shutdown hook kills them, so none outlives the JVM. */
    private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(Process::destroyForcibly), "redis-server-reaper"));
    }

    private final Path binary;
    private final Path root;
    private final Path log;
    private final List<String> extraArgs;
    private Path configFile;
    private int port;
    private int runs;
    private long logOffset;
    private Process process;
    private boolean paused;
    private boolean closed;

    private ProcessRedisServer(Path binary, Path root, List<String> extraArgs) {
        super(extraArgs);
        this.binary = binary;
        this.root = root;
        this.log = root.resolve("redis.log");
        this.extraArgs = extraArgs;
    }

    static ProcessRedisServer start(List<String> extraArgs) {
        return start(null, extraArgs);
    }

    /**
     * Starts a server that reads (and may rewrite) a configuration file holding {@code config}, as a
     * Sentinel must; {@code null} for none.
     */
    static ProcessRedisServer start(String config, List<String> extraArgs) {
        Path binary = RedisBinary.path();
        ProcessRedisServer server;
        try {
            server = new ProcessRedisServer(binary, Files.createTempDirectory("redis-server-"), extraArgs);
            if (config != null) {
                server.configFile = Files.writeString(server.root.resolve("redis.conf"), config);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("could not create a directory for redis-server", e);
        }
        try {
            server.startOnFreePort();
            return server;
        } catch (RuntimeException e) {
            server.close();
            throw e;
        }
    }

    private synchronized void startOnFreePort() {
        for (int attempt = 1; ; attempt++) {
            port = freePort();
            if (launch()) {
                return;
            }
            if (attempt == PORT_ATTEMPTS) {
                throw new IllegalStateException("gave up after " + PORT_ATTEMPTS
                        + " free ports were taken by other processes before redis-server could bind them");
            }
        }
    }

    @Override
    public String host() {
        return LOOPBACK;
    }

    @Override
    public synchronized int port() {
        return port;
    }

    @Override
    public synchronized long pid() {
        return process.pid();
    }

    @Override
    public synchronized void stop() {
        if (isRunning()) {
            if (paused) {
                // A stopped process would hold SIGTERM pending until continued.
                signal("CONT");
            }
            process.destroy();
            if (!awaitExit()) {
                kill();
            }
        }
        exited();
    }

    @Override
    public synchronized void kill() {
        if (isRunning()) {
            process.destroyForcibly();
            if (!awaitExit()) {
                throw new IllegalStateException("redis-server " + process.pid() + " survived SIGKILL for " + EXIT_TIMEOUT.toSeconds() + " s");
            }
        }
        exited();
    }

    @Override
    public synchronized void restart() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
        stop();
        if (!launch()) {
            throw new IllegalStateException("port " + port + " was taken by another process while redis-server was down");
        }
    }

    @Override
    public synchronized void pause() {
        if (!isRunning()) {
            throw new IllegalStateException(this + " is not running");
        }
        if (!paused) {
            signal("STOP");
            paused = true;
        }
    }

    @Override
    public synchronized void resume() {
        if (paused && isRunning()) {
            signal("CONT");
        }
        paused = false;
    }

    @Override
    public synchronized boolean isRunning() {
        return process != null && process.isAlive();
    }

    @Override
    public synchronized boolean isPaused() {
        return paused && isRunning();
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            stop();
        } finally {
            deleteTree(root);
        }
    }

    /** Starts redis-server on {@link #port} and waits until it answers; false if another process has the port. */
    private boolean launch() {
        // A fresh directory per run, so that a restart never loads the dump of an earlier run.
        Path dir = root.resolve("run-" + ++runs);
        List<String> command = new ArrayList<>(List.of(binary.toString()));
        if (configFile != null) {
            command.add(configFile.toString());
        }
        command.addAll(List.of("--bind", LOOPBACK, "--port", Integer.toString(port), "--save", "", "--appendonly", "no",
                "--protected-mode", "no", "--daemonize", "no", "--dir", dir.toString()));
        command.addAll(extraArgs);
        try {
            Files.createDirectory(dir);
            logOffset = Files.exists(log) ? Files.size(log) : 0;
            process = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(Redirect.appendTo(log.toFile()))
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("could not run " + binary, e);
        }
        LIVE.add(process);
        paused = false;
        return awaitReady(command);
    }

    private boolean awaitReady(List<String> command) {
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (process.isAlive()) {
            if (ping(READY_PING_TIMEOUT)) {
                if (call("INFO", "server").contains("process_id:" + process.pid() + "\r\n")) {
                    return true;
                }
                // Another server answers on this port; ours cannot bind it.
                kill();
                return false;
            }
            if (System.nanoTime() - deadline >= 0) {
                kill();
                throw failure("did not answer PING within " + START_TIMEOUT.toSeconds() + " s", command);
            }
            sleep(POLL_INTERVAL);
        }
        exited();
        if (logTail().contains("Address already in use")) {
            return false;
        }
        throw failure("exited with status " + process.exitValue() + " before answering PING", command);
    }

    private IllegalStateException failure(String what, List<String> command) {
        return new IllegalStateException("redis-server " + what + "\n  command: " + String.join(" ", command)
                + "\n  last lines of " + log + ":\n" + logTail());
    }

    private String logTail() {
        try {
            byte[] bytes = Files.readAllBytes(log);
            List<String> lines = new String(bytes, (int) logOffset, bytes.length - (int) logOffset, UTF_8).lines().toList();
            return String.join("\n", lines.subList(Math.max(0, lines.size() - LOG_TAIL_LINES), lines.size()));
        } catch (NoSuchFileException e) {
            return "(no output)";
        } catch (IOException e) {
            return "(unreadable: " + e + ")";
        }
    }

    /**
     * Java sends only SIGTERM and SIGKILL, so STOP and CONT go through the shell's built-in {@code kill},
     * which exists wherever {@code /bin/sh} does (unlike {@code /bin/kill}, missing from minimal images).
     */
    private void signal(String signal) {
        String command = "kill -s " + signal + " " + process.pid();
        try {
            Process kill = new ProcessBuilder("/bin/sh", "-c", command).redirectErrorStream(true).start();
            String output = new String(kill.getInputStream().readAllBytes(), UTF_8);
            if (kill.waitFor() != 0) {
                throw new IllegalStateException("'" + command + "' failed: " + output);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("could not run '" + command + "'", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running '" + command + "'", e);
        }
    }

    private boolean awaitExit() {
        try {
            return process.waitFor(EXIT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for redis-server " + process.pid() + " to exit", e);
        }
    }

    private void exited() {
        if (process != null) {
            LIVE.remove(process);
        }
        paused = false;
    }

    private static void sleep(Duration duration) {
        try {
            Thread.sleep(duration.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for redis-server to start", e);
        }
    }

    private static void deleteTree(Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
        } catch (IOException e) {
            throw new UncheckedIOException("could not delete " + root, e);
        }
    }
}
