package io.reactivelock.bench;

import io.lettuce.core.RedisURI;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.function.LongUnaryOperator;

/**
 * Runs one round of one cell: starts the workers (in this JVM, or in forked JVMs for a cell that
 * spans processes), warms up, measures for a fixed time with the Redis-side counters around the
 * window, stops the workers and waits until every started pair has finished.
 */
final class CellRunner {

    private final RedisStats redis;
    private final RedisURI uri;
    private final ExecutorService hopExecutor;
    private final Settings settings;

    CellRunner(RedisStats redis, RedisURI uri, ExecutorService hopExecutor, Settings settings) {
        this.redis = redis;
        this.uri = uri;
        this.hopExecutor = hopExecutor;
        this.settings = settings;
    }

    /**
     * Runs one round of a cell and adds its figures to {@code into}; {@code contender} is the
     * lock of {@code contenderId}, a primitive's cell makes the primitive of that id.
     */
    void run(Scenario scenario, Contender contender, String contenderId, int round, CellResult into) {
        String key = "bench:" + scenario + ":" + contenderId + ":r" + round + ":" + System.nanoTime();
        if (scenario.jvms > 1) {
            runForked(scenario, contenderId, key, into);
            return;
        }
        Round workers = new Round(Primitives.contender(scenario, contenderId, contender, uri), scenario.workers,
                scenario.instances, 0, scenario.contended, scenario.workload, key, hopExecutor, null);
        workers.start();
        long[] monitor = warmUp(settings.warmupMillis);
        measure(into, monitor, workers::begin, workers::end);
        workers.stop();
        workers.addTo(into);
        into.roundRates.add(workers.ops() * 1e9 / into.lastRoundNanos);
    }

    /**
     * Runs a cell only to get the JIT to compile its paths before any measurement; nothing is
     * kept. Cells in forked JVMs warm their own JVMs up.
     */
    void warmUpJit(Scenario scenario, Contender contender, String contenderId) {
        if (scenario.jvms > 1 || !Primitives.runs(scenario, contenderId)) {
            return;
        }
        Round workers = new Round(Primitives.contender(scenario, contenderId, contender, uri), scenario.workers,
                scenario.instances, 0, scenario.contended, scenario.workload,
                "bench:jit:" + scenario + ":" + contenderId + ":" + System.nanoTime(), hopExecutor, null);
        workers.start();
        Threads.sleep(settings.jitWarmupMillis);
        workers.stop();
    }

    /**
     * Sleeps through the warm-up, sampling MONITOR in its middle: {clients' commands, commands
     * run inside Lua scripts}.
     */
    private long[] warmUp(long millis) {
        long monitorMillis = Math.min(300, millis / 4 + 1);
        Threads.sleep(millis / 2);
        long[] monitor = redis.monitorSample(monitorMillis);
        Threads.sleep(Math.max(0, millis - millis / 2 - monitorMillis));
        return monitor;
    }

    /** The measured window, with Redis's counters reset before and read after it. */
    private void measure(CellResult into, long[] monitor, Runnable begin, Runnable end) {
        redis.reset();
        double redisCpuBefore = redis.cpuSeconds();
        begin.run();
        long start = System.nanoTime();
        Threads.sleep(settings.measureMillis);
        end.run();
        long nanos = System.nanoTime() - start;
        double redisCpuAfter = redis.cpuSeconds();
        Map<String, Long> commands = redis.commandCalls();
        Map<String, Long> micros = redis.commandMicros();
        into.rounds++;
        into.nanos += nanos;
        into.lastRoundNanos = nanos;
        into.redisCpuSeconds += redisCpuAfter - redisCpuBefore;
        into.monitorClient += monitor[0];
        into.monitorLua += monitor[1];
        commands.forEach((name, calls) -> into.commands.merge(name, calls, Long::sum));
        micros.forEach((name, usec) -> into.commandMicros.merge(name, usec, Long::sum));
    }

    /**
     * One round in {@code scenario.jvms} forked JVMs ({@link ForkedWorkers}), all on {@code key}:
     * each warms its JIT up on a lock of its own for the forked JVMs' JIT warm-up time, then they start their
     * workers and report ready, this JVM warms them up for the forked JVMs' JIT warm-up plus the
     * warm-up time, tells them to begin and end the measurement around the Redis counters, then
     * merges what they report and the critical sections they recorded.
     */
    private void runForked(Scenario scenario, String contenderId, String key, CellResult into) {
        forked(scenario.jvms, scenario.toString(), (j, file) -> ForkedWorkers.Jvm.start(settings.forkJvmArgs, uri,
                scenario.name(), contenderId, j, key, file, settings.forkJitWarmupMillis), worker -> 0, into, null, () -> {});
    }

    /**
     * One cell of the {@link ScaleGrid} in {@code shape.processes()} forked JVMs, run as a C16X
     * round is, the overlaps counted per name; adds each JVM's own figures to {@code processes}
     * and calls {@code beforeMeasure} between the warm-up and the measured window.
     */
    void runGrid(ScaleGrid.Shape shape, String contenderId, CellResult into, List<Map<String, String>> processes,
            Runnable beforeMeasure) {
        String key = "bench:pxn:" + shape.processes() + "x" + shape.names() + ":" + contenderId + ":" + System.nanoTime();
        forked(shape.processes(), "PXN " + shape.label(), (j, file) -> ForkedWorkers.Jvm.start(settings.forkJvmArgs,
                uri, shape.spec(), contenderId, j, key, file, settings.forkJitWarmupMillis), shape::nameOf, into,
                processes, beforeMeasure);
    }

    /** Starts forked JVM {@code index}, its critical sections to be written to {@code sections}. */
    private interface Launch {
        ForkedWorkers.Jvm start(int index, Path sections) throws IOException;
    }

    /** The round of a cell in {@code count} forked JVMs; {@code lockOf} maps a worker to the lock it takes. */
    private void forked(int count, String cell, Launch launch, LongUnaryOperator lockOf, CellResult into,
            List<Map<String, String>> processes, Runnable beforeMeasure) {
        List<ForkedWorkers.Jvm> jvms = new ArrayList<>();
        List<Path> sections = new ArrayList<>();
        try {
            Files.createDirectories(settings.out);
            for (int j = 0; j < count; j++) {
                Path file = Files.createTempFile(settings.out, "sections-", ".bin");
                sections.add(file);
                jvms.add(launch.start(j, file));
            }
            for (ForkedWorkers.Jvm jvm : jvms) {
                jvm.awaitReady();
            }
            long[] monitor = warmUp(settings.forkJitWarmupMillis + settings.warmupMillis);
            beforeMeasure.run();
            measure(into, monitor, () -> jvms.forEach(j -> j.send("BEGIN")), () -> jvms.forEach(j -> j.send("END")));
            long ops = 0;
            for (ForkedWorkers.Jvm jvm : jvms) {
                Map<String, String> figures = jvm.awaitResult();
                ops += into.addJvmFigures(figures);
                if (processes != null) {
                    processes.add(figures);
                }
            }
            Intervals.Merged merged = Intervals.merge(sections, lockOf);
            into.overlaps += merged.overlaps();
            into.switches += merged.switches();
            into.roundRates.add(ops * 1e9 / into.lastRoundNanos);
        } catch (IOException | RuntimeException e) {
            into.errors++;
            if (into.firstError == null) {
                into.firstError = e.toString();
            }
            Bench.progress("  " + cell + " failed: " + e);
        } finally {
            jvms.forEach(ForkedWorkers.Jvm::close);
            for (Path file : sections) {
                try {
                    Files.deleteIfExists(file);
                } catch (IOException e) {
                    Bench.progress("could not delete " + file + ": " + e);
                }
            }
        }
    }
}
