package io.reactivelock.bench;

import io.reactivelock.support.RedisServer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import reactor.core.scheduler.Schedulers;

/**
 * Entry point of the benchmark: one redis-server, every contender on every scenario, then the
 * scale cell in its own JVM; prints Markdown tables on stdout (and to {@code bench/target/bench}),
 * progress on stderr. Run it with {@code ./mvnw -q -Pbench -pl bench -am verify} (bench/pom.xml has
 * the knobs; {@link Shape} the pinned shape).
 *
 * <p>Why a purpose-built harness and not JMH: every cell is a concurrency scenario (64 chains, 16
 * contending workers, a hundred thousand waiters) that must be measured with its side channels
 * (an overlap detector, Redis {@code INFO commandstats} deltas, process CPU, live threads)
 * against one shared redis-server, with the contenders interleaved. JMH's strengths (forks,
 * blackholes, per-invocation timing of small methods) buy little here, and its thread groups,
 * state scopes and forked JVMs would have to be worked around to get those figures.
 */
public final class Bench {

    /**
     * {@code -Dbench.replica=true}: the server gets one replica on this machine, so that the contenders
     * {@code ours} (replica-acknowledged grants, on by default) and {@code ours-noack} (off), and
     * {@code redisson} ({@code checkLockSyncedSlaves}, on by default, with a master-slave
     * configuration that names the replica) and {@code redisson-nosync} (off) compare their cost.
     */
    static final String REPLICA = "bench.replica";

    private Bench() {}

    /** A replica of {@code master}, in sync; its address goes to Redisson's master-slave configuration. */
    private static RedisServer replicaOf(RedisServer master) {
        RedisServer replica = RedisServer.start("--replicaof", master.host(), Integer.toString(master.port()));
        while (!replica.call("INFO", "replication").contains("master_link_status:up")
                || !master.info("replication", "connected_slaves").equals("1")) {
            Threads.sleep(20);
        }
        System.setProperty(REPLICA + ".address", "redis://" + replica.host() + ":" + replica.port());
        progress("replica on port " + replica.port() + " in sync");
        return replica;
    }

    public static void main(String[] args) throws Exception {
        Shape shape = Shape.fromProperties();
        int pinned = shape.runPinnedClient(Bench.class, args);
        if (pinned >= 0) {
            System.exit(pinned);
        }
        Settings settings = new Settings();
        long began = System.nanoTime();
        ThreadPoolExecutor hopExecutor = Threads.hopExecutor();

        RedisServer redis = RedisServer.start();
        RedisServer replica = Boolean.getBoolean(REPLICA) ? replicaOf(redis) : null;
        try {
            RedisStats stats = new RedisStats(redis);
            shape.pinRedis(stats);
            Report report = new Report(settings, stats, shape);
            report.baselineThreads = JvmProbe.liveThreads();
            progress("shape: " + shape.describe());
            progress("redis-server " + stats.info("server", "redis_version") + " on port " + redis.port()
                    + "; " + settings.describe() + "; contenders " + settings.contenders
                    + "; scenarios " + settings.scenarios);

            Map<String, CellResult> cells = new LinkedHashMap<>();
            for (Scenario scenario : settings.scenarios) {
                for (String id : settings.contenders) {
                    if (Primitives.runs(scenario, id)) {
                        cells.put(key(scenario, id), new CellResult(scenario, Primitives.name(scenario, id)));
                    }
                }
            }
            CellRunner runner = new CellRunner(stats, redis.uri(), hopExecutor, settings);
            if (settings.jitWarmupMillis > 0) {
                // Two cores: C2 compiling in a measured window would steal a third of the machine.
                for (String id : settings.contenders) {
                    progress("JIT warm-up: " + Contenders.IDS.get(id));
                    Contender contender = Contenders.create(id, redis.uri());
                    for (Scenario scenario : settings.scenarios) {
                        runner.warmUpJit(scenario, contender, id);
                    }
                    Schedulers.shutdownNow();
                }
            }
            for (int round = 0; round < settings.rounds; round++) {
                List<String> order = new ArrayList<>(settings.contenders);
                if (round % 2 == 1) {
                    java.util.Collections.reverse(order);
                }
                for (String id : order) {
                    progress("round " + (round + 1) + "/" + settings.rounds + ": " + Contenders.IDS.get(id));
                    Contender contender = Contenders.create(id, redis.uri());
                    for (Scenario scenario : settings.scenarios) {
                        CellResult cell = cells.get(key(scenario, id));
                        if (cell == null) {
                            continue; // no such primitive
                        }
                        runner.run(scenario, contender, id, round, cell);
                        progress(String.format(java.util.Locale.ROOT, "  %-4s %10.0f ops/s  p50 %8.1f us  cpu %6.1f us/op  %s",
                                scenario, cell.roundRates.isEmpty() ? 0 : cell.roundRates.get(cell.roundRates.size() - 1),
                                cell.micros(cell.latency, 50), cell.cpuMicrosPerOp(),
                                cell.errors > 0 ? cell.errors + " errors: " + cell.firstError : ""));
                    }
                    // Reactor's shared schedulers belong to whoever uses them; start each contender without them.
                    Schedulers.shutdownNow();
                }
            }
            report.cells = cells;

            if (settings.pxn) {
                progress("PXN grid: processes " + settings.pxnProcesses + " x names " + settings.pxnNames + ", "
                        + settings.pxnWaitersPerName + " waiters per name in all, " + settings.pxnHoldMillis
                        + " ms hold; repeats " + settings.pxnRepeat);
                report.grid = ScaleGrid.run(settings, runner, stats);
            }
            if (settings.scaleWaiters > 0 && settings.scaleNames > 0) {
                report.scale = runScaleCells(settings, redis);
            }
            if (settings.memoryNames > 0) {
                progress("memory cell: " + settings.memoryNames + " locks held, per contender");
                report.memoryNames = settings.memoryNames;
                report.memory = MemoryCell.run(redis, stats, settings.memoryNames);
                Schedulers.shutdownNow();
            }
            report.seconds = (System.nanoTime() - began) / 1e9;

            Files.createDirectories(settings.out);
            Files.writeString(settings.out.resolve("results.svg"), Chart.svg(settings, cells, report.caption()));
            Files.writeString(settings.out.resolve("results.csv"), Baseline.csv(settings, cells));
            if (settings.baseline != null) {
                report.baseline = Baseline.read(settings.baseline);
            }
            String markdown = report.markdown();
            System.out.println(markdown);
            Files.writeString(settings.out.resolve("results.md"), markdown);
            progress("written to " + settings.out.resolve("results.md") + ", results.svg (chart) and results.csv"
                    + " (figures for -Dbench.baseline=)");
        } finally {
            if (replica != null) {
                replica.close();
            }
            redis.close();
            hopExecutor.shutdownNow();
        }
        System.exit(0);
    }

    private static String key(Scenario scenario, String id) {
        return scenario + "/" + id;
    }

    /**
     * Runs the scale cell with the configured number of waiters; if that does not complete (out of
     * heap, out of time), runs it again with the number the first attempt's heap figures say fits.
     */
    private static List<Map<String, String>> runScaleCells(Settings settings, RedisServer redis)
            throws IOException, InterruptedException {
        List<Map<String, String>> results = new ArrayList<>();
        Map<String, String> first = runScaleCell(settings, redis, settings.scaleWaiters);
        results.add(first);
        if (!ScaleResult.ok(first)) {
            int fits = ScaleResult.waitersThatFit(first, settings.scaleWaiters);
            if (fits > 0) {
                progress("scale cell: " + settings.scaleWaiters + " did not complete (" + ScaleResult.why(first)
                        + "); trying " + fits + " waiters");
                results.add(runScaleCell(settings, redis, fits));
            }
        }
        return results;
    }

    /** Runs {@link ScaleCell} in a JVM of its own, with its own (small) heap. */
    private static Map<String, String> runScaleCell(Settings settings, RedisServer redis, int waiters)
            throws IOException, InterruptedException {
        progress("scale cell: " + waiters + " waiters on " + settings.scaleNames + " names, " + settings.scaleJvmArgs);
        List<String> command = new ArrayList<>();
        command.add(java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(Arrays.asList(settings.scaleJvmArgs.trim().split("\\s+")));
        command.add("-XX:+ExitOnOutOfMemoryError");
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), ScaleCell.class.getName(),
                Integer.toString(redis.port()), Integer.toString(waiters),
                Integer.toString(settings.scaleNames), Long.toString(settings.scaleTimeoutSeconds)));
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        Map<String, String> result = new LinkedHashMap<>();
        result.put("waiters", Integer.toString(waiters));
        result.put("names", Integer.toString(settings.scaleNames));
        try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.startsWith("SCALE ")) {
                    int eq = line.indexOf('=');
                    result.put(line.substring(6, eq), line.substring(eq + 1));
                } else {
                    System.err.println("[scale] " + line);
                }
            }
        }
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor();
        }
        result.put("exitCode", Integer.toString(process.exitValue()));
        result.put("jvmArgs", settings.scaleJvmArgs);
        return result;
    }

    static void progress(String message) {
        System.err.println("[bench] " + message);
        System.err.flush();
    }
}
