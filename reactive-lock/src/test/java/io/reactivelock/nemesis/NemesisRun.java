package io.reactivelock.nemesis;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.awaitility.Awaitility.await;

import io.reactivelock.nemesis.History.Access;
import io.reactivelock.nemesis.History.Blocking;
import io.reactivelock.nemesis.History.ClockCheck;
import io.reactivelock.nemesis.History.Loss;
import io.reactivelock.nemesis.History.Op;
import io.reactivelock.nemesis.History.Quiescence;
import io.reactivelock.nemesis.History.Renewal;
import io.reactivelock.nemesis.History.Stall;
import io.reactivelock.support.RedisSentinelSet;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.TcpProxy;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * One nemesis run: starts the lock Redis (behind a {@link TcpProxy}), a second lock Redis watched by
 * Sentinels (a {@link RedisSentinelSet}, reached through them) and the resource Redis, forks
 * the client JVMs ({@link NemesisClient}), lets the {@link Nemesis} inject faults for the run's
 * duration, heals, lets the clients finish, checks what locks are left, and returns the
 * {@link History}. Every server and client is stopped when it returns or fails.
 *
 * <h2>One clock for all processes</h2>
 * Every event is stamped by the process where it happens with {@link System#nanoTime()}. On Linux
 * that is {@code clock_gettime(CLOCK_MONOTONIC)}, one clock for the whole machine, so stamps from
 * different JVMs compare directly and the parent only subtracts its origin. No wall-clock time is
 * used (it can step), and no stamp is taken on receipt (a frozen or busy client would delay its
 * events). The run checks this instead of assuming it: each client's first event must carry a stamp
 * between the parent's stamp before it started that JVM and the parent's stamp on receiving the
 * event; a client that fails this is reported as a clock violation.
 */
final class NemesisRun {

    private static final Duration READY_TIMEOUT = Duration.ofMinutes(2);
    private static final Duration EXIT_TIMEOUT = Duration.ofSeconds(60);
    private static final List<String> CLIENT_JVM_OPTIONS = List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
            "-Xmx160m", "-Xss512k", "-XX:+AllowRedefinitionToAddDeleteMethods");
    /**
     * {@code setpriv --pdeathsig KILL --} where this machine has it (Linux), else nothing: a client JVM
     * frozen by the nemesis when this JVM dies (killed by a timeout, say) would never read the end of
     * its input, and would stay. The signal comes when the thread that started the client ends: the
     * test's thread, which lives as long as the JVM.
     */
    private static final List<String> DIE_WITH_PARENT = dieWithParent();

    private final Settings settings;
    private final Path directory;
    private final long origin = System.nanoTime();
    private final List<Client> clients = new ArrayList<>();
    private final List<Op> ops = Collections.synchronizedList(new ArrayList<>());
    private final List<Renewal> renewals = Collections.synchronizedList(new ArrayList<>());
    private final List<Loss> losses = Collections.synchronizedList(new ArrayList<>());
    private final List<Blocking> blocking = Collections.synchronizedList(new ArrayList<>());
    private final List<Quiescence> quiescence = Collections.synchronizedList(new ArrayList<>());
    private final List<ClockCheck> clockChecks = Collections.synchronizedList(new ArrayList<>());
    private final List<Stall> stalls = Collections.synchronizedList(new ArrayList<>());
    private final Writer events;
    private final Thread killClients = new Thread(this::stopClients, "nemesis-kill-clients");

    private NemesisRun(Settings settings, Path directory) throws IOException {
        this.settings = settings;
        this.directory = Files.createDirectories(directory);
        // What an earlier run wrote there (its close-ups, say) must not pass for this run's.
        try (var earlier = Files.list(directory)) {
            for (Path file : earlier.filter(Files::isRegularFile).toList()) {
                Files.delete(file);
            }
        }
        this.events = Files.newBufferedWriter(directory.resolve("events.log"), UTF_8);
    }

    /** Runs the clients under the nemesis and returns what happened; {@code directory} gets the raw events and client logs. */
    static History run(Settings settings, Path directory) throws Exception {
        NemesisRun run = new NemesisRun(settings, directory);
        Runtime.getRuntime().addShutdownHook(run.killClients);
        StallWatch watch = StallWatch.start((kind, from, to, gcMillis, stacks) ->
                run.stalls.add(new Stall("parent", kind, run.relative(from), run.relative(to), gcMillis)));
        try {
            return run.go();
        } finally {
            watch.close();
            run.stopClients();
            Runtime.getRuntime().removeShutdownHook(run.killClients);
            run.events.close();
        }
    }

    private long now() {
        return System.nanoTime() - origin;
    }

    private long relative(long stamp) {
        return stamp < 0 ? -1 : stamp - origin;
    }

    private History go() throws Exception {
        try (RedisServer lockRedis = RedisServer.start();
                RedisSentinelSet sentinels = RedisSentinelSet.start();
                RedisServer resource = RedisServer.start();
                TcpProxy proxy = TcpProxy.to(lockRedis)) {
            String sentinelPorts = sentinels.uri().getSentinels().stream().map(uri -> Integer.toString(uri.getPort()))
                    .collect(Collectors.joining(","));
            for (int i = 0; i < settings.clients(); i++) {
                Client client = new Client("c" + i, proxy.port(), sentinelPorts, resource.port());
                synchronized (clients) {
                    clients.add(client);
                }
            }
            await("every client ready").atMost(READY_TIMEOUT).pollInterval(Duration.ofMillis(50))
                    .until(() -> clients.stream().allMatch(client -> client.ready || !client.process.isAlive()));
            for (Client client : clients) {
                if (!client.ready) {
                    throw new IllegalStateException(client.name + " died before it was ready; see " + client.log);
                }
            }

            long nemesisStart = now();
            Nemesis nemesis = new Nemesis(lockRedis, proxy, sentinels, nemesisTargets(), this::now, settings.seed());
            nemesis.start();
            try {
                long longest = settings.duration().plus(settings.extension()).toNanos();
                await("the run's duration").atMost(settings.duration().plus(settings.extension()).plusMinutes(1))
                        .pollInterval(Duration.ofMillis(250))
                        .until(() -> clients.stream().anyMatch(c -> !c.process.isAlive()) || nemesis.failed()
                                || now() - nemesisStart >= longest
                                || now() - nemesisStart >= settings.duration().toNanos()
                                        && (settings.extension().isZero() || controlCaughtAFrozenWriter(resource, nemesis)));
            } finally {
                nemesis.stopAndHeal();
            }
            long nemesisEnd = now();
            for (Client client : clients) {
                if (!client.process.isAlive()) {
                    throw new IllegalStateException(client.name + " died during the run; see " + client.log);
                }
                client.send("stop");
            }
            await("every client to finish its operations").atMost(NemesisClient.DRAIN_TIMEOUT.plusMinutes(1))
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> quiescence.size() == clients.size());
            long quiescent = now();
            List<String> leftAtQuiescence = lockKeys(lockRedis, sentinels);
            long settled = quiescent + History.longestTtlNanos() + settings.slack().toNanos();
            await("lock keys to go").atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(50))
                    .until(() -> lockKeys(lockRedis, sentinels).isEmpty() || now() >= settled);
            List<String> leftBehind = lockKeys(lockRedis, sentinels);
            long keysGone = leftBehind.isEmpty() ? now() : -1;
            String redisVersion = lockRedis.describe();

            for (Client client : clients) {
                client.send("exit");
            }
            for (Client client : clients) {
                if (!client.process.waitFor(EXIT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS) || client.process.exitValue() != 0) {
                    throw new IllegalStateException(client.name + " did not exit cleanly; see " + client.log);
                }
                client.reader.join(EXIT_TIMEOUT.toMillis());
            }
            return new History(settings, redisVersion, nemesisStart, nemesisEnd, quiescent, keysGone, now(), List.copyOf(ops),
                    accesses(resource), nemesis.faults(), List.copyOf(renewals), List.copyOf(losses), List.copyOf(blocking),
                    List.copyOf(quiescence), leftAtQuiescence, leftBehind, List.copyOf(clockChecks), List.copyOf(stalls));
        }
    }

    /**
     * Whether the negative control has, so far, a stale write accepted while its writer's JVM was
     * frozen: what an extended short run waits for (see {@link Settings#extension()}).
     */
    private boolean controlCaughtAFrozenWriter(RedisServer resource, Nemesis nemesis) {
        History sofar = new History(settings, "?", 0, now(), now(), -1, now(), List.copyOf(ops), accesses(resource),
                nemesis.faults(), List.of(), List.of(), List.of(), List.of(), List.of(), List.of(), List.of(), List.of());
        return Checker.control(sofar).staleWritesDuring(FaultKind.CLIENT_PAUSE) > 0;
    }

    private Nemesis.Clients nemesisTargets() {
        return new Nemesis.Clients() {
            @Override
            public List<String> names() {
                return clients.stream().map(client -> client.name).toList();
            }

            @Override
            public long pid(String name) {
                return clients.stream().filter(client -> client.name.equals(name)).findFirst().orElseThrow().process.pid();
            }

            @Override
            public String aboutToWrite(long after) {
                long from = System.nanoTime() + after;
                Client most = null;
                long mostWrites = 0;
                for (Client client : clients) {
                    long writes = client.writesDue.values().stream()
                            .filter(due -> due.writeAt() > from)
                            .mapToLong(due -> due.name().startsWith("hot-") ? 1000 : 1) // hot ones first
                            .sum();
                    if (writes > mostWrites) {
                        most = client;
                        mostWrites = writes;
                    }
                }
                return most == null ? null : most.name;
            }
        };
    }

    /**
     * Keys of the locks (the lock itself, its line, waiters and sleepers) on both lock servers (the
     * Sentinels' current master), leaving out fencing records.
     */
    private static List<String> lockKeys(RedisServer redis, RedisSentinelSet sentinels) {
        return Stream.of(redis, sentinels.currentMaster())
                .flatMap(server -> server.callList("KEYS", "lock:*").stream())
                .map(String::valueOf).filter(key -> !key.endsWith(":fence")).sorted().toList();
    }

    private static List<Access> accesses(RedisServer resource) {
        long length = Long.parseLong(resource.call("LLEN", Resource.LOG));
        List<Access> accesses = new ArrayList<>();
        for (long from = 0; from < length; from += 10_000) {
            for (Object entry : resource.callList("LRANGE", Resource.LOG, Long.toString(from), Long.toString(from + 9_999))) {
                String[] f = ((String) entry).split(" ");
                accesses.add(new Access(accesses.size(), f[0], f[1], f[2].equals("fenced"), f[3].equals("write"),
                        Long.parseLong(f[4]), Long.parseLong(f[5]), Long.parseLong(f[6]), f[7].equals("1"),
                        Long.parseLong(f[8])));
            }
        }
        return accesses;
    }

    private static List<String> dieWithParent() {
        for (String directory : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path setpriv = Path.of(directory, "setpriv");
            if (!directory.isEmpty() && Files.isExecutable(setpriv)) {
                List<String> prefix = List.of(setpriv.toString(), "--pdeathsig", "KILL", "--");
                try {
                    List<String> probe = new ArrayList<>(prefix);
                    probe.add("true");
                    Process process = new ProcessBuilder(probe).redirectErrorStream(true).start();
                    process.getInputStream().readAllBytes();
                    return process.waitFor() == 0 ? prefix : List.of();
                } catch (IOException e) {
                    return List.of();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return List.of();
                }
            }
        }
        return List.of();
    }

    private void stopClients() {
        List<Client> started;
        synchronized (clients) {
            started = List.copyOf(clients);
        }
        for (Client client : started) {
            // SIGKILL ends a frozen JVM as well.
            client.process.destroyForcibly();
        }
        for (Client client : started) {
            try {
                client.process.waitFor(EXIT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private synchronized void log(String line) {
        try {
            events.write(line);
            events.write('\n');
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A write an operation will send on {@code name} at {@code writeAt} (the client's nanoTime). */
    private record WriteDue(String name, long writeAt) {}

    /** One client JVM: its process, its standard input, and the thread that reads its events. */
    private final class Client {
        final String name;
        final Process process;
        final Path log;
        final Thread reader;
        final BufferedWriter input;
        /** Operations inside their body with a write to come, by id. */
        final Map<String, WriteDue> writesDue = new ConcurrentHashMap<>();
        volatile boolean ready;

        Client(String name, int lockPort, String sentinelPorts, int resourcePort) throws IOException {
            this.name = name;
            this.log = directory.resolve(name + ".log");
            List<String> command = new ArrayList<>(DIE_WITH_PARENT);
            command.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                    System.getProperty("java.class.path")));
            command.addAll(CLIENT_JVM_OPTIONS);
            command.add("-Dredis.server=" + System.getProperty("redis.server", "embedded"));
            command.addAll(List.of(NemesisClient.class.getName(), "client=" + name, "lock=" + lockPort,
                    "sentinels=" + sentinelPorts, "resource=" + resourcePort, "instances=" + settings.instances(), "workers=" + settings.workers(),
                    "hot=" + settings.hot(), "cold=" + settings.cold()));
            long before = System.nanoTime();
            this.process = new ProcessBuilder(command).redirectError(log.toFile()).start();
            this.input = new BufferedWriter(process.outputWriter(UTF_8));
            this.reader = new Thread(() -> read(before), "nemesis-reader-" + name);
            reader.setDaemon(true);
            reader.start();
        }

        void send(String command) throws IOException {
            input.write(command);
            input.newLine();
            input.flush();
        }

        private void read(long startedAt) {
            try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), UTF_8))) {
                String text;
                while ((text = out.readLine()) != null) {
                    long received = System.nanoTime();
                    log(name + " " + text);
                    Line.parse(text).ifPresent(line -> handle(line, startedAt, received));
                }
            } catch (IOException endOfStream) {
                // the JVM is gone
            }
        }

        private void handle(Line line, long startedAt, long received) {
            switch (line.kind()) {
                case "HELLO" -> clockChecks.add(new ClockCheck(name, relative(startedAt), relative(line.number("t")),
                        relative(received)));
                case "READY" -> ready = true;
                case "ENTER" -> writesDue.put(line.text("op"), new WriteDue(line.text("name"), line.number("writeAt")));
                case "OP" -> {
                    writesDue.remove(line.text("id"));
                    ops.add(op(line));
                }
                case "RENEW" -> renewals.add(new Renewal(name, (int) line.number("instance"), line.text("name"),
                        relative(line.number("t"))));
                case "LOST" -> losses.add(new Loss(name, (int) line.number("instance"), line.text("name"),
                        relative(line.number("t")), line.text("cause")));
                case "BLOCKING" -> blocking.add(new Blocking(name, relative(line.number("t")), line.text("method")));
                case "QUIESCENT" -> quiescence.add(new Quiescence(name, relative(line.number("t")), line.text("activeLeases"),
                        (int) line.number("hung")));
                case "STALL" -> stalls.add(new Stall(name, line.text("kind"), relative(line.number("from")),
                        relative(line.number("to")), line.number("gc")));
                case "BYE" -> { }
                default -> log("parent: unknown event from " + name + ": " + line);
            }
        }

        private Op op(Line line) {
            return new Op(line.text("id"), name, (int) line.number("instance"), line.text("name"),
                    Boolean.parseBoolean(line.text("fair")), TimeUnit.MILLISECONDS.toNanos(line.number("ttl")),
                    TimeUnit.MILLISECONDS.toNanos(line.number("timeout")), line.number("body"), line.number("cancel"),
                    relative(line.number("start")), relative(line.number("enter")), relative(line.number("leaseStart")),
                    line.number("fence"), relative(line.number("readAt")), relative(line.number("writeSent")),
                    relative(line.number("exit")), relative(line.number("validUntil")),
                    relative(line.number("end")), line.text("outcome"));
        }
    }
}
