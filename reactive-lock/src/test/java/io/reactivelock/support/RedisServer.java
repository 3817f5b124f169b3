package io.reactivelock.support;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.lettuce.core.RedisURI;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.lang.ProcessBuilder.Redirect;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.channels.FileChannel;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.opentest4j.TestAbortedException;

/**
 * One real {@code redis-server} process for tests, listening on 127.0.0.1 only, on a free port of its
 * own, with a private temporary directory for its files and log. {@link RedisBinary} says which binary
 * runs (the system property {@code redis.server}).
 *
 * <p>Every method blocks: call them from the test thread or another thread that may block, never from
 * inside a reactive pipeline. Closing is the normal way to end a server. A server still running when the
 * JVM exits is killed by a shutdown hook; when the JVM dies without running hooks (SIGKILL, the OOM
 * killer, surefire's fork timeout), the kernel kills it, where {@code setpriv} exists (Linux), and the next
 * test JVM deletes the directories it left.
 */
public final class RedisServer implements AutoCloseable {

    static final String LOOPBACK = "127.0.0.1";
    /**
     * What every server runs with, in a process or a container: no persistence, no protected mode, in
     * the foreground, and a full sync to a new replica sent at once (7.0+ waits 5 s by default for
     * more replicas to share it).
     */
    private static final List<String> DEFAULT_ARGS = List.of("--save", "", "--appendonly", "no", "--protected-mode", "no",
            "--daemonize", "no", "--repl-diskless-sync-delay", "0");
    private static final Duration START_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration READY_PING_TIMEOUT = Duration.ofSeconds(1);
    private static final Duration POLL_INTERVAL = Duration.ofMillis(10);
    private static final Duration EXIT_TIMEOUT = Duration.ofSeconds(5);
    private static final int PORT_ATTEMPTS = 5;
    private static final int LOG_TAIL_LINES = 30;

    /** Processes not yet seen to exit: the shutdown hook kills them. */
    private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(RedisServer::reap, "redis-server-reaper"));
    }

    /** The binary, or null when the server runs in a container of {@link #image}. */
    private final Path binary;
    private final String image;
    private final Path root;
    private final Path log;
    private final List<String> extraArgs;
    private final String password;
    private final boolean tls;
    private Path configFile;
    private int port;
    private int tlsPort;
    /** The locks that keep this server's ports from the servers of other test JVMs until close ({@link #reserveFreePort}). */
    private final List<FileChannel> reservations = new ArrayList<>();
    private int runs;
    private long logOffset;
    private Process process;
    private RedisContainer container;
    private boolean paused;
    private boolean closed;

    private RedisServer(Path binary, String image, Path root, List<String> extraArgs, boolean tls) {
        this.binary = binary;
        this.image = image;
        this.root = root;
        this.log = root.resolve("redis.log");
        this.extraArgs = extraArgs;
        this.tls = tls;
        int at = extraArgs.lastIndexOf("--requirepass");
        this.password = at >= 0 && at + 1 < extraArgs.size() ? extraArgs.get(at + 1) : null;
    }

    /** Starts a server with the default configuration ({@link #DEFAULT_ARGS}). */
    public static RedisServer start() {
        return start(new String[0]);
    }

    /**
     * Starts a server with extra {@code redis-server} arguments, such as {@code "--maxmemory", "1mb"} or
     * {@code "--requirepass", "secret"} (which {@link #uri()} and {@link #call} then use). They must not
     * set {@code --port}, {@code --tls-port}, {@code --bind} or {@code --dir}, which the harness owns.
     */
    public static RedisServer start(String... extraArgs) {
        return start(null, List.of(extraArgs), false);
    }

    /**
     * Starts a server that also accepts TLS connections, on a free port of its own ({@link #tlsPort()});
     * {@code extraArgs} give its certificate and key ({@code --tls-cert-file} and so on).
     */
    public static RedisServer startWithTls(String... extraArgs) {
        return start(null, List.of(extraArgs), true);
    }

    /**
     * Starts a server that reads (and may rewrite) a configuration file holding {@code config}, as a
     * Sentinel must.
     */
    static RedisServer start(String config, List<String> extraArgs) {
        return start(config, extraArgs, false);
    }

    private static RedisServer start(String config, List<String> extraArgs, boolean tls) {
        // The fast tier runs no server: a test that starts its own is skipped, as the extension skips a class.
        if (RedisBinary.none()) {
            throw new TestAbortedException(RedisBinary.absence().orElseThrow());
        }
        boolean inContainer = RedisBinary.isContainer();
        if (inContainer && (config != null || tls)) {
            throw new IllegalStateException("-D" + RedisBinary.PROPERTY + "=container runs plain servers only: not a Sentinel, "
                    + "a server with a configuration file or TLS (their files would have to be copied into the container)");
        }
        Path binary = inContainer ? null : RedisBinary.path();
        String image = inContainer ? RedisBinary.containerImage() : null;
        RedisServer server;
        try {
            server = new RedisServer(binary, image, Files.createTempDirectory(Scratch.directory(), "redis-server-"), List.copyOf(extraArgs), tls);
            if (config != null) {
                server.configFile = Files.writeString(server.root.resolve("redis.conf"), config);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("could not create a directory for redis-server", e);
        }
        try {
            server.startOnFreePorts();
            return server;
        } catch (RuntimeException e) {
            server.close();
            throw e;
        }
    }

    private synchronized void startOnFreePorts() {
        for (int attempt = 1; ; attempt++) {
            port = reserveFreePort();
            if (tls) {
                tlsPort = reserveFreePort();
            }
            if (launch()) {
                return;
            }
            releasePorts();
            if (attempt == PORT_ATTEMPTS) {
                throw new IllegalStateException("gave up after " + PORT_ATTEMPTS
                        + " attempts: each time another process took a free port before redis-server could bind it");
            }
        }
    }

    /** The host to connect to. */
    public String host() {
        return LOOPBACK;
    }

    /** The port, which stays the same across {@link #restart()}. */
    public synchronized int port() {
        return port;
    }

    /** The TLS port of a server started by {@link #startWithTls}, which stays the same across {@link #restart()}. */
    public synchronized int tlsPort() {
        if (!tls) {
            throw new IllegalStateException(this + " was started without TLS");
        }
        return tlsPort;
    }

    /** The Lettuce URI of this server, with its password if it has one. */
    public RedisURI uri() {
        RedisURI.Builder uri = RedisURI.builder().withHost(host()).withPort(port());
        if (password != null) {
            uri.withPassword(password.toCharArray());
        }
        return uri.build();
    }

    /**
     * The addresses of this host on which the server can be reached: its {@code bind} setting, or for a
     * server in a container, the host addresses its port is published on.
     */
    public synchronized List<String> listensOn() {
        if (container != null) {
            return container.publishedOn();
        }
        List<Object> bind = callList("CONFIG", "GET", "bind");
        return List.of(((String) bind.get(1)).split(" "));
    }

    /** The process id of the server as last started (in a container: its process id on this host). */
    public synchronized long pid() {
        return container != null ? container.pid() : process.pid();
    }

    /** Shuts the server down gracefully (resuming it first if paused) and waits until it has exited. */
    public synchronized void stop() {
        if (container != null) {
            container.stop();
            paused = false;
            return;
        }
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

    /** Kills the server abruptly, as a crash would, and waits until it has exited. */
    public synchronized void kill() {
        if (container != null) {
            container.kill();
            paused = false;
            return;
        }
        if (isRunning()) {
            process.destroyForcibly();
            if (!awaitExit()) {
                throw new IllegalStateException("redis-server " + process.pid() + " survived SIGKILL for " + EXIT_TIMEOUT.toSeconds() + " s");
            }
        }
        exited();
    }

    /** Stops the server if it is running, then starts it again on the same port(s) with an empty dataset. */
    public synchronized void restart() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
        stop();
        if (!launch()) {
            throw new IllegalStateException("port " + port + " was taken by another process while redis-server was down");
        }
    }

    /**
     * Starts the server again on the same port(s) in the directory of its last run, so that it
     * loads what that run persisted (its append-only file, when started with
     * {@code --appendonly yes}); stops it first if it is running ({@link #kill()} it before, for a
     * crash). Not in a container, whose restart is a new one.
     */
    public synchronized void restartFromDisk() {
        if (closed || image != null) {
            throw new IllegalStateException(this + (closed ? " is closed" : " runs in a container, which restarts empty"));
        }
        stop();
        runs--;
        if (!launch()) {
            throw new IllegalStateException("port " + port + " was taken by another process while redis-server was down");
        }
    }

    /** Freezes the server: connections are still accepted but nothing is answered until {@link #resume()}. */
    public synchronized void pause() {
        if (!isRunning()) {
            throw new IllegalStateException(this + " is not running");
        }
        if (!paused) {
            if (container != null) {
                container.pause();
            } else {
                signal("STOP");
            }
            paused = true;
        }
    }

    /** Unfreezes a paused server; does nothing otherwise. */
    public synchronized void resume() {
        if (paused && isRunning()) {
            if (container != null) {
                container.unpause();
            } else {
                signal("CONT");
            }
        }
        paused = false;
    }

    /** Whether the server is alive (paused counts as alive). */
    public synchronized boolean isRunning() {
        return container != null ? container.isRunning() : process != null && process.isAlive();
    }

    /** Whether the server is alive but paused. */
    public synchronized boolean isPaused() {
        return paused && isRunning();
    }

    /** Stops the server, killing it if it does not stop within 5 s, and removes its files; idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            stop();
        } finally {
            releasePorts();
            deleteTree(root);
        }
    }

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

    /** Whether the server has {@code command} ({@code COMMAND INFO} names it), such as {@code WAITAOF} from Redis 7.2 and Valkey 8. */
    public boolean hasCommand(String command) {
        return callList("COMMAND", "INFO", command).get(0) != null;
    }

    /** The value of {@code field} in the {@code section} of {@code INFO}; null when it has none. */
    public String info(String section, String field) {
        return call("INFO", section).lines().filter(line -> line.startsWith(field + ":"))
                .map(line -> line.substring(field.length() + 1)).findFirst().orElse(null);
    }

    /** Whether the server answers {@code PING} within {@code timeout}; false if refused, silent or still loading its files. */
    public boolean ping(Duration timeout) {
        try {
            return "PONG".equals(Resp.call(host(), port(), password, timeout, "PING"));
        } catch (IOException unreachableOrSilent) {
            return false;
        } catch (IllegalStateException error) {
            if (String.valueOf(error.getMessage()).startsWith("LOADING")) {
                return false;
            }
            throw error;
        }
    }

    /**
     * The server's own version, from {@code INFO server}: {@code valkey_version} on Valkey (whose
     * {@code redis_version} is the Redis version it is compatible with, 7.2.4 for Valkey 8),
     * {@code redis_version} on Redis.
     */
    public String version() {
        return ServerInfo.of(call("INFO", "server")).version();
    }

    /** The server's name and version, such as {@code Redis 7.4.1} or {@code Valkey 8.0.1 (redis_version:7.2.4)}. */
    public String describe() {
        return ServerInfo.of(call("INFO", "server")).toString();
    }

    @Override
    public String toString() {
        return "RedisServer[" + host() + ":" + port() + (image != null ? " in a container of " + image : "") + "]";
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

    /** Starts redis-server on {@link #port} and waits until it answers; false if another process has a port it needs. */
    private boolean launch() {
        if (image != null) {
            return launchContainer();
        }
        // A fresh directory per run, so that a restart never loads the dump of an earlier run.
        Path dir = root.resolve("run-" + ++runs);
        boolean again = Files.isDirectory(dir);
        List<String> command = new ArrayList<>(List.of(binary.toString()));
        if (configFile != null) {
            command.add(configFile.toString());
        }
        command.addAll(List.of("--bind", LOOPBACK, "--port", Integer.toString(port), "--dir", dir.toString()));
        command.addAll(DEFAULT_ARGS);
        if (tls) {
            command.addAll(List.of("--tls-port", Integer.toString(tlsPort)));
        }
        command.addAll(extraArgs);
        try {
            if (!again) {
                Files.createDirectory(dir);
            }
            logOffset = Files.exists(log) ? Files.size(log) : 0;
        } catch (IOException e) {
            throw new UncheckedIOException("could not prepare " + dir, e);
        }
        process = Spawner.start(new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(Redirect.appendTo(log.toFile())));
        LIVE.add(process);
        paused = false;
        return awaitReady(command);
    }

    /**
     * Starts a container of {@link #image} publishing {@link #port} on the loopback interface, and waits
     * until it answers; false if another process has the port. A restart is a new container: an empty
     * dataset, as a restarted process has.
     */
    private boolean launchContainer() {
        List<String> args = new ArrayList<>(List.of("--bind", "0.0.0.0"));
        args.addAll(DEFAULT_ARGS);
        args.addAll(extraArgs);
        try {
            container = RedisContainer.start(image, port, args);
        } catch (RedisContainer.PortTakenException taken) {
            container = null;
            return false;
        }
        paused = false;
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (!ping(READY_PING_TIMEOUT)) {
            boolean exited = !container.isRunning();
            if (exited || System.nanoTime() - deadline >= 0) {
                String what = exited ? "exited with status " + container.exitCode() + " before answering PING"
                        : "did not answer PING on " + LOOPBACK + ":" + port + " within " + START_TIMEOUT.toSeconds() + " s";
                String logs = container.logs();
                container.kill();
                throw new IllegalStateException("redis-server in a container of " + image + " " + what
                        + "\n  arguments: " + String.join(" ", args) + "\n  its output:\n" + logs);
            }
            sleep(POLL_INTERVAL);
        }
        RedisBinary.announce(image, call("INFO", "server"));
        return true;
    }

    private boolean awaitReady(List<String> command) {
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (process.isAlive()) {
            if (ping(READY_PING_TIMEOUT)) {
                String info = call("INFO", "server");
                if (info.contains("process_id:" + process.pid() + "\r\n")) {
                    RedisBinary.announce(binary.toString(), info);
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

    private static void reap() {
        LIVE.forEach(Process::destroyForcibly);
        for (Process process : LIVE) {
            try {
                process.waitFor(EXIT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        Scratch.delete();
    }

    private static void deleteTree(Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
        } catch (IOException e) {
            throw new UncheckedIOException("could not delete " + root, e);
        }
    }

    /**
     * A port that is free on the loopback interface, chosen below the ephemeral ranges (Linux 32768+,
     * macOS and Windows 49152+): while a server is down, a client reconnecting to it could otherwise be
     * given the server's own port as its local port, connect to itself and keep the port from the restart.
     * Reserved for this server until {@link #close()}: a lock on the file named by the port in
     * {@code <java.io.tmpdir>/reactive-lock-ports}, which the other test JVMs of the build skip, so that
     * none of them starts a server on it while this one is down for a {@link #restart()} (with three
     * test JVMs, RedlockLockTest lost a node's port so in 1 of 3 runs beside two busy loops). The
     * system releases the lock of a JVM that dies.
     */
    private int reserveFreePort() {
        Path reservedPorts = Path.of(System.getProperty("java.io.tmpdir"), "reactive-lock-ports");
        try {
            Files.createDirectories(reservedPorts);
            for (int attempt = 0; attempt < 100; attempt++) {
                int candidate = ThreadLocalRandom.current().nextInt(20_000, 32_768);
                FileChannel file = FileChannel.open(reservedPorts.resolve(Integer.toString(candidate)),
                        StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                boolean reserved;
                try {
                    reserved = file.tryLock() != null && isFree(candidate);
                } catch (OverlappingFileLockException heldInThisJvm) {
                    reserved = false;
                }
                if (reserved) {
                    reservations.add(file);
                    return candidate;
                }
                file.close(); // and with it the lock, if it was taken
            }
        } catch (IOException e) {
            throw new UncheckedIOException("could not reserve a port in " + reservedPorts, e);
        }
        throw new IllegalStateException("no free port found in 20000-32767");
    }

    private void releasePorts() {
        for (FileChannel file : reservations) {
            try {
                file.close();
            } catch (IOException ignored) {
                // Closed with the JVM at the latest.
            }
        }
        reservations.clear();
    }

    private static boolean isFree(int port) {
        try (ServerSocket probe = new ServerSocket()) {
            probe.bind(new InetSocketAddress(LOOPBACK, port));
            return true;
        } catch (IOException taken) {
            return false;
        }
    }

    /**
     * Starts every redis-server from one thread that lives as long as the JVM, under
     * {@code setpriv --pdeathsig KILL} where that works. Linux sends the parent-death signal when the
     * <em>thread</em> that started the child ends, not the process, so a server started from a pool
     * thread that later retires would be killed with it.
     */
    private static final class Spawner {

        private static final List<String> WATCH = parentDeathWatch();
        private static final ExecutorService THREAD = Executors.newSingleThreadExecutor(task -> {
            Thread thread = new Thread(task, "redis-server-spawner");
            thread.setDaemon(true);
            return thread;
        });

        static Process start(ProcessBuilder builder) {
            List<String> command = new ArrayList<>(WATCH);
            command.addAll(builder.command());
            builder.command(command);
            try {
                return THREAD.submit(builder::start).get();
            } catch (ExecutionException e) {
                if (e.getCause() instanceof IOException io) {
                    throw new UncheckedIOException("could not run " + String.join(" ", command), io);
                }
                throw new IllegalStateException("could not run " + String.join(" ", command), e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while starting redis-server", e);
            }
        }

        /** {@code setpriv --pdeathsig KILL --} if this machine has a setpriv that knows the option, else nothing. */
        private static List<String> parentDeathWatch() {
            return RedisBinary.onPath("setpriv")
                    .map(setpriv -> List.of(setpriv.toString(), "--pdeathsig", "KILL", "--"))
                    .filter(Spawner::runs)
                    .orElse(List.of());
        }

        private static boolean runs(List<String> prefix) {
            List<String> probe = new ArrayList<>(prefix);
            probe.add("true");
            try {
                Process process = new ProcessBuilder(probe).redirectErrorStream(true).start();
                process.getInputStream().transferTo(OutputStream.nullOutputStream());
                return process.waitFor() == 0;
            } catch (IOException e) {
                return false;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
    }

    /**
     * This JVM's directory for redis-server files and the extracted binary,
     * {@code <java.io.tmpdir>/reactive-lock-redis-<pid>}, made at first use after deleting those of JVMs
     * that are gone (killed before their shutdown hook could delete them).
     */
    static final class Scratch {

        private static final String PREFIX = "reactive-lock-redis-";
        private static Path directory;

        private Scratch() {
        }

        static synchronized Path directory() {
            if (directory == null) {
                deleteLeftovers();
                Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
                try {
                    directory = Files.createDirectories(tmp.resolve(PREFIX + ProcessHandle.current().pid()));
                } catch (IOException e) {
                    throw new UncheckedIOException("could not create a directory for redis-server in " + tmp, e);
                }
            }
            return directory;
        }

        static synchronized void delete() {
            if (directory != null && Files.exists(directory)) {
                deleteTree(directory);
            }
        }

        /** Deletes the directories of JVMs that are gone. */
        static void deleteLeftovers() {
            try (Stream<Path> entries = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
                entries.filter(entry -> entry.getFileName().toString().startsWith(PREFIX))
                        .filter(entry -> ownerGone(entry.getFileName().toString().substring(PREFIX.length())))
                        .forEach(leftover -> {
                            try {
                                deleteTree(leftover);
                            } catch (UncheckedIOException notOurs) {
                                // Another user's, or being deleted by someone else: not ours to clean.
                            }
                        });
            } catch (IOException unreadable) {
                // Nothing to clean that we can see.
            }
        }

        private static boolean ownerGone(String pid) {
            try {
                return ProcessHandle.of(Long.parseLong(pid)).filter(ProcessHandle::isAlive).isEmpty();
            } catch (NumberFormatException notOneOfOurs) {
                return false;
            }
        }
    }
}
