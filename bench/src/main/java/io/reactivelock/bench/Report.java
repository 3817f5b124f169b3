package io.reactivelock.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/** Renders the results as Markdown. */
final class Report {

    private final Settings settings;
    private final RedisStats redis;
    int baselineThreads;
    Map<String, CellResult> cells;
    List<Map<String, String>> scale;
    /** The PXN grid's cells; null when it did not run. */
    List<ScaleGrid.Cell> grid;
    /** The memory cell, by contender: bytes and keys per held lock; null when it did not run. */
    Map<String, double[]> memory;
    int memoryNames;
    Map<String, double[]> baseline;
    double seconds;
    final String loadAtStart = loadAverage();

    private final Shape shape;

    Report(Settings settings, RedisStats redis, Shape shape) {
        this.settings = settings;
        this.redis = redis;
        this.shape = shape;
    }

    String markdown() {
        StringBuilder md = new StringBuilder();
        header(md);
        md.append("![throughput and p99 per contender and cell](results.svg)\n\n");
        boolean primitives = false;
        for (Scenario scenario : settings.scenarios) {
            if (scenario.primitive() && !primitives) {
                primitivesIntro(md);
                primitives = true;
            }
            if (scenario.contended) {
                contendedTable(md, scenario);
            } else {
                uncontendedTable(md, scenario);
            }
        }
        commandBreakdown(md);
        if (grid != null) {
            gridTable(md);
        }
        if (scale != null) {
            scaleTable(md);
        }
        if (memory != null) {
            memoryTable(md);
        }
        targets(md);
        if (baseline != null) {
            beforeAfter(md);
        }
        return md.toString();
    }

    /** Redis bytes per held lock, from {@code used_memory} on an emptied server, per contender. */
    private void memoryTable(StringBuilder md) {
        md.append(String.format(Locale.ROOT, "%n### Redis memory per held lock (%,d locks held, `INFO memory` used_memory delta)%n%n",
                memoryNames));
        md.append("No timing: the figures do not depend on the load. Waiters, fair waiters and released names: "
                + "`scale.RedisMemoryPerLockTest`.\n\n");
        md.append("| contender | bytes per held lock (used_memory) | keys per held lock | bytes of one lock's keys (MEMORY USAGE) |\n"
                + "|---|---:|---:|---:|\n");
        memory.forEach((contender, m) -> md.append(String.format(Locale.ROOT, "| %s | %.0f | %.1f | %.0f |%n", contender, m[0], m[1], m[2])));
    }

    /** When and where, in one line, for the chart. */
    String caption() {
        return String.format(Locale.ROOT, "%s · Redis %s · CPUs %s, %s · load average %s at start · %d round(s) of %.1f s per cell",
                java.time.LocalDate.now(), redis.info("server", "redis_version"), Shape.online(), shape.caption(),
                loadAtStart, settings.rounds, settings.measureMillis / 1000.0);
    }

    private void header(StringBuilder md) {
        Runtime rt = Runtime.getRuntime();
        md.append("# reactive-lock benchmark\n\n");
        md.append("- command: `").append(command()).append("`\n");
        md.append("- date: ").append(java.time.OffsetDateTime.now().withNano(0)).append('\n');
        md.append("- machine: CPUs ").append(Shape.online()).append(" (").append(cpuModel()).append("), ")
                .append(System.getProperty("os.name")).append(' ').append(System.getProperty("os.version")).append(' ')
                .append(System.getProperty("os.arch")).append('\n');
        md.append("- shape: ").append(shape.describe()).append('\n');
        md.append("- JVM: ").append(System.getProperty("java.vm.name")).append(' ')
                .append(System.getProperty("java.runtime.version")).append(", heap max ")
                .append(rt.maxMemory() >> 20).append(" MB, ")
                .append(String.join(" ", java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
                        .stream().filter(a -> a.startsWith("-X")).toList()))
                .append('\n');
        md.append("- Redis: ").append(redis.info("server", "redis_version")).append(" (")
                .append(redis.info("server", "executable")).append("), one server on 127.0.0.1 for every contender\n");
        md.append("- libraries: reactive-lock ").append(System.getProperty("bench.libVersion", "(this build)"))
                .append(", ").append(jar(io.lettuce.core.RedisClient.class))
                .append(", ").append(jar(reactor.core.publisher.Mono.class))
                .append(", ").append(jar(io.netty.channel.Channel.class))
                .append(", ").append(jar(org.redisson.Redisson.class))
                .append(", ").append(jar(org.springframework.integration.redis.util.RedisLockRegistry.class))
                .append(", ").append(jar(org.springframework.data.redis.connection.RedisConnectionFactory.class))
                .append(", ").append(jar(org.springframework.core.SpringVersion.class))
                .append(", ").append(jar(org.HdrHistogram.Histogram.class)).append('\n');
        md.append("- protocol: ").append(settings.describe())
                .append("; contenders interleaved (the order reverses every round), each created fresh per round;"
                        + " lease TTL 30 s everywhere; CPU is this JVM's process CPU time, Redis CPU the redis-server's (INFO cpu);"
                        + " threads = peak live JVM threads during the measurement (")
                .append(baselineThreads).append(" before any contender: JVM + harness)\n");
        md.append(String.format(Locale.ROOT, "- run time: %.0f s; load average at start %s, at end %s"
                + " (other processes on this machine count: read small differences as noise)%n", seconds, loadAtStart, loadAverage()));
        md.append("- contenders: **reactive-lock** `ReactiveRedisLock.create(uri, LockOptions.defaults())` (fair: its"
                + " `fair()`);"
                + " **Redisson** `Redisson.create(config).reactive().getLock(name)` (fair: `getFairLock(name)`), default single-server config,"
                + " `lock(threadId)`/`unlock(threadId)` with a random thread id per acquisition (watchdog mode);"
                + " **Spring** `RedisLockRegistry` on a `LettuceConnectionFactory` (defaults), blocking, on platform threads;"
                + " **raw floor** `SET key token NX PX` + `EVALSHA` compare-and-delete on Lettuce's async API, one"
                + " connection, busy lock polled with the library's default backoff, no renewal, no fencing,"
                + " no timeouts, ThreadLocalRandom tokens.\n");
        md.append("- instances: an instance is what one application instance of a contender holds (its own client and"
                + " connections; for Spring its own connection factory and registry, which is one lock owner with an"
                + " in-JVM lock per name), created fresh for each cell. U1, U64 and C16 use one instance shared by all"
                + " workers, C16I one per worker, C16X one per forked JVM.\n");
        md.append("- scenarios: U1/U64 bodies are empty (`Mono.empty()`); a C16 body enters on the thread that got the"
                + " lock and leaves on a `hop-` thread (reactive: `publishOn`; Spring: `submit(..).get()`). In C16X each"
                + " forked JVM (").append(settings.forkJvmArgs).append(") first warms up alone for ")
                .append(settings.forkJitWarmupMillis / 1000.0).append(" s, its 4 workers contending on a lock of its own (4 JVMs"
                + " compiling at once on this machine's cores need that long), then on the shared lock for that long again"
                + " plus the warm-up time (the paths of hand-offs between processes get hot only there), and all measure"
                + " the same window; overlaps and hand-offs to another worker come from every"
                + " critical section's `System.nanoTime()` interval, merged across the JVMs; CPU, allocation, GC and"
                + " JIT are summed over them, threads are the largest JVM's.\n\n");
        md.append("Ratios: `xR` against Redisson, `xraw` against the raw floor; > 1 means more of the figure"
                + " (better for throughput, worse for latency, CPU, commands). \"rounds ±\" is half the spread"
                + " (max - min) of the per-round throughputs relative to their mean: the run-to-run noise.\n\n");
    }

    /** What the primitives' cells compare, once before their tables. */
    private static void primitivesIntro(StringBuilder md) {
        md.append("## Primitives: semaphore, read-write lock, multi-lock\n\n");
        md.append("reactive-lock's `semaphore(capacity)`, `readWriteLock()` and `multiLock()`"
                + " (default options) against Redisson's `RPermitExpirableSemaphoreReactive`, `RReadWriteLockReactive`"
                + " and its reactive multi-lock (`RedissonReactiveClient.getMultiLock(RLockReactive...)`, a"
                + " `RedissonMultiLock`); the other contenders have no such primitives. One instance shared by the"
                + " cell's workers; every acquisition is its own owner (a token; for Redisson a random thread id) with a"
                + " 30 s lease. What each one's semantics cost: ours takes the semaphore's capacity at each call and"
                + " renews every holder's lease while its body runs; Redisson's semaphore keeps its capacity in a"
                + " counter that `trySetPermits` must create first (done once per name, before the measured window)"
                + " and does not renew its permits (`acquire(30 s)`: a body that outlives the lease loses its permit"
                + " unnoticed); Redisson's locks are renewed by its watchdog; its multi-lock takes the locks one after"
                + " another in the order given, holding the earlier ones while it waits for the next, and ours takes"
                + " all names in one script, holding none while it waits. Contended bodies enter on the thread that"
                + " acquired and leave on a `hop-` thread; a checker counts, per name, each entry the primitive should"
                + " have refused (semaphore: ").append(Workload.PERMITS.rule()).append("; read-write lock: ")
                .append(Workload.READ_WRITE.rule()).append("; multi-lock: ").append(Workload.LOCKS.rule())
                .append("). Uncontended cells time the pair; contended ones the wait to acquire.\n\n");
    }

    private void uncontendedTable(StringBuilder md, Scenario scenario) {
        md.append("## ").append(scenario).append(" (").append(scenario.measures).append("): ")
                .append(scenario.description).append("\n\n");
        md.append("| contender | pairs/s | p50 µs | p99 µs | CPU µs/pair | Redis CPU µs/pair | alloc B/pair | Redis cmds/pair (round trips) | threads | errors |\n");
        md.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        CellResult redisson = cell(scenario, "redisson");
        CellResult raw = cell(scenario, "raw");
        for (String id : settings.contenders) {
            CellResult c = cell(scenario, id);
            if (c == null) {
                continue; // no such primitive
            }
            md.append("| ").append(c.contender)
                    .append(" | ").append(withRatios(c, redisson, raw, CellResult::opsPerSecond, "%,.0f")).append(spread(c))
                    .append(" | ").append(withRatios(c, redisson, raw, x -> x.micros(x.latency, 50), "%,.0f"))
                    .append(" | ").append(withRatios(c, redisson, raw, x -> x.micros(x.latency, 99), "%,.0f"))
                    .append(" | ").append(withRatios(c, redisson, raw, CellResult::cpuMicrosPerOp, "%,.1f"))
                    .append(" | ").append(withRatios(c, redisson, raw, CellResult::redisCpuMicrosPerOp, "%,.1f"))
                    .append(" | ").append(withRatios(c, redisson, raw, CellResult::bytesPerOp, "%,.0f"))
                    .append(" | ").append(commands(c))
                    .append(" | ").append(c.peakThreads)
                    .append(" | ").append(errors(c)).append(" |\n");
        }
        md.append('\n');
    }

    private void contendedTable(StringBuilder md, Scenario scenario) {
        md.append("## ").append(scenario).append(" (").append(scenario.measures).append("): ")
                .append(scenario.description).append("\n\n");
        // A primitive's cell may have several holders at once: no hand-off to count, a checker instead of the overlap detector.
        boolean lock = !scenario.primitive();
        String op = scenario.op();
        md.append("| contender | ").append(scenario.unit()).append(lock ? " | to another worker" : "")
                .append(" | wait p50 ms | wait p99 ms | wait max ms | acquisitions per worker | ")
                .append(lock ? "overlaps" : "checker violations").append(" | Redis cmds/").append(op)
                .append(" (round trips) | CPU µs/").append(op).append(" | Redis CPU µs/").append(op)
                .append(" | alloc B/").append(op).append(" | threads | errors |\n");
        md.append("|---|").append("---:|".repeat(lock ? 13 : 12)).append('\n');
        CellResult redisson = cell(scenario, "redisson");
        CellResult raw = cell(scenario, "raw");
        for (String id : settings.contenders) {
            CellResult c = cell(scenario, id);
            if (c == null) {
                continue; // no such primitive
            }
            md.append("| ").append(c.contender)
                    .append(" | ").append(withRatios(c, redisson, raw, CellResult::opsPerSecond, "%,.0f")).append(spread(c));
            if (lock) {
                md.append(" | ").append(c.ops == 0 ? "-" : String.format(Locale.ROOT, "%.0f%%", 100.0 * c.switches / c.ops));
            }
            md.append(" | ").append(withRatios(c, redisson, raw, x -> x.micros(x.wait, 50) / 1e3, "%,.2f"))
                    .append(" | ").append(withRatios(c, redisson, raw, x -> x.micros(x.wait, 99) / 1e3, "%,.1f"))
                    .append(" | ").append(withRatios(c, redisson, null, x -> x.wait.getTotalCount() == 0 ? Double.NaN : x.wait.getMaxValue() / 1e6, "%,.0f"))
                    .append(" | ").append(c.minPerWorker()).append("..").append(c.maxPerWorker())
                    .append(" | ").append(c.overlaps == 0 ? "0" : "**" + c.overlaps + "**")
                    .append(" | ").append(commands(c))
                    .append(" | ").append(withRatios(c, redisson, null, CellResult::cpuMicrosPerOp, "%,.1f"))
                    .append(" | ").append(withRatios(c, redisson, null, CellResult::redisCpuMicrosPerOp, "%,.1f"))
                    .append(" | ").append(withRatios(c, redisson, null, CellResult::bytesPerOp, "%,.0f"))
                    .append(" | ").append(c.peakThreads)
                    .append(" | ").append(errors(c)).append(" |\n");
        }
        if (lock) {
            md.append("\nhand-offs/s counts every acquisition of the lock; \"to another worker\" is the share that"
                    + " went to a different worker than the previous holder; acquisitions per worker is min..max over the"
                    + " ").append(scenario.workers).append(" workers during the measurement (fairness); overlaps must be 0.\n\n");
        } else {
            md.append("\nacquisitions/s counts every acquisition; acquisitions per worker is min..max over the ")
                    .append(scenario.workers).append(" workers during the measurement (fairness); checker violations (")
                    .append(scenario.workload.rule()).append(") must be 0.\n\n");
        }
    }

    private void commandBreakdown(StringBuilder md) {
        md.append("## Redis commands per operation, by command\n\n");
        md.append("From `INFO commandstats` (reset before each measurement), divided by the operations measured."
                + " Commands a Lua script runs with `redis.call` are counted too; the round trips in the tables"
                + " remove them using the share of script-internal commands seen in a ~300 ms MONITOR sample"
                + " taken during each warm-up. In brackets, Redis's execution time per call (`usec` of the same"
                + " stats: the command itself, without reading, parsing and replying; a script's includes the"
                + " commands it runs, which also stand on their own).\n\n");
        for (Scenario scenario : settings.scenarios) {
            for (String id : settings.contenders) {
                CellResult c = cell(scenario, id);
                if (c == null || c.ops == 0) {
                    continue;
                }
                md.append("- ").append(scenario).append(", ").append(c.contender).append(": ")
                        .append(byCommand(c))
                        .append(String.format(Locale.ROOT, " _(during the measurement: GC %d ms, JIT %d ms, %,d ops)_",
                                c.gcMillis, c.jitMillis, c.ops))
                        .append('\n');
            }
        }
        md.append('\n');
    }

    private void scaleTable(StringBuilder md) {
        md.append("## Scale: concurrent withLock waiters in one JVM (reactive-lock, acquireTimeout 5 min)\n\n");
        md.append("All waiters are subscribed in one burst; each body hops to another thread under a per-name"
                + " occupancy detector. Heap \"all queued\" is measured after one full GC right after the burst.\n\n");
        md.append("| waiters | names | JVM | completed | errors | overlaps | time to drain | heap all queued (per waiter)"
                + " | heap after GC, peak | live threads (min..max) | JVM CPU | Redis cmds (scripts) |\n");
        md.append("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (Map<String, String> r : scale) {
            boolean ok = ScaleResult.ok(r);
            md.append("| ").append(fmtInt(r.get("waiters"))).append(" | ").append(fmtInt(r.get("names")))
                    .append(" | `").append(r.get("jvmArgs")).append("` | ").append(fmtInt(r.getOrDefault("completed", "-")))
                    .append(" | ").append(r.getOrDefault("errors", "-"))
                    .append(" | ").append(r.getOrDefault("overlaps", "-"))
                    .append(" | ").append(ok ? r.get("seconds") + " s" : "**did not complete**: " + ScaleResult.why(r))
                    .append(" | ").append(r.containsKey("heapAllQueuedMb") ? r.get("heapAllQueuedMb") + " MB" : "-")
                    .append(ScaleResult.bytesPerWaiter(r) > 0 ? String.format(Locale.ROOT, " (%,d B)", ScaleResult.bytesPerWaiter(r)) : "")
                    .append(" | ").append(r.getOrDefault("liveAfterGcPeakMb", "-")).append(" of ")
                    .append(r.getOrDefault("maxHeapMb", "?")).append(" MB")
                    .append(" | ").append(r.getOrDefault("threadsMin", "-")).append("..").append(r.getOrDefault("threadsMax", "-"))
                    .append(" (").append(r.getOrDefault("threadsBefore", "-")).append(" before)")
                    .append(" | ").append(r.getOrDefault("cpuSeconds", "-")).append(" s")
                    .append(" | ").append(fmtInt(r.getOrDefault("redisCommands", "-"))).append(" (")
                    .append(fmtInt(r.getOrDefault("scripts", "-"))).append(")")
                    .append(" |\n");
        }
        for (Map<String, String> r : scale) {
            if (!"-".equals(r.getOrDefault("firstError", "-"))) {
                md.append("\nFirst error with ").append(r.get("waiters")).append(" waiters: `").append(r.get("firstError")).append("`\n");
            }
        }
        md.append('\n');
    }

    /** The PXN grid: one row per cell, then commands by command, skipped cells and first errors. */
    private void gridTable(StringBuilder md) {
        md.append("## PXN: many names, few waiters each, across processes (issue 28)\n\n");
        ScaleGrid.Cell any = grid.get(0);
        md.append(String.format(Locale.ROOT, "P processes (forked JVMs, `%s`, one instance of the contender each: its own"
                + " client) x N names, %d waiters per name in all processes together (N x %d waiters in the cell),"
                + " worker g taking name g mod N and process p the workers [p*N*%d/P, (p+1)*N*%d/P), so that with"
                + " P >= 2 the waiters of a name are in different processes and every hand-off crosses processes."
                + " Each waiter loops: ask, hold %d ms (a timer: `Mono.delay`; Spring's thread sleeps), release."
                + " Each cell: the JVMs warm up alone (%.1f s, on names of their own), then on the cell's names for"
                + " %.1f s, then one window of %.1f s. hand-offs/s = acquisitions completed in the window; wait = from"
                + " asking to holding; overlaps = two holders of one name at once, from every critical section's"
                + " `System.nanoTime()` interval merged across the JVMs per name (must be 0); errors = failed"
                + " acquisitions or cells, warm-up and drain included (must be 0). Redis is sampled at the end of the"
                + " warm-up (\"during\": `used_memory`, `DBSIZE`, `PUBSUB CHANNELS`/`NUMPAT`, `CLIENT LIST` sub+psub)"
                + " and after the JVMs have exited (\"after\"); \"before\" is the server before the cell. Threads and"
                + " heap are per process, the largest process's: live threads at the end of the window, heap peak in"
                + " the window (sampled every 50 ms) and live heap after a full GC at its end. CPU: the redis-server's"
                + " (`INFO cpu`) and the forked JVMs' process CPU summed, over the window.%n%n",
                settings.forkJvmArgs, any.shape.waitersPerName(), any.shape.waitersPerName(),
                any.shape.waitersPerName(), any.shape.waitersPerName(), any.shape.holdMillis(),
                settings.forkJitWarmupMillis / 1000.0, (settings.forkJitWarmupMillis + settings.warmupMillis) / 1000.0,
                settings.measureMillis / 1000.0));
        if (any.shape.rate() > 0) {
            md.append(String.format(Locale.ROOT, "**Paced** (`bench.pxn.rate=%d`): the waiters of a cell ask for at most"
                    + " %,d acquisitions per second in all, whatever its name count: before every ask a waiter pauses a"
                    + " random time, exponential with mean (N x %d) / %,d s, so that the asks of many waiters form a"
                    + " Poisson stream; the pause comes on top of the waiter's wait and hold, so a cell whose waits and"
                    + " holds are long next to the pause (few names) asks for less. The JIT warm-up alone is not paced;"
                    + " the wait is from the ask; a pause still running when the cell stops ends there.%n%n",
                    any.shape.rate(), any.shape.rate(), any.shape.waitersPerName(), any.shape.rate()));
        }
        md.append("| P x N | contender | hand-offs/s | xR | wait p50 / p99 / max ms | errors | overlaps"
                + " | acquisitions per process, min..max | CPU in the window: Redis / all JVMs | Redis cmds per hand-off (round trips) | subscriptions during:"
                + " channels, patterns; sub+psub on connections (subscribed connections) | used_memory before / during /"
                + " after | keys during / after | threads per process | heap peak / live per process |\n");
        md.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (ScaleGrid.Cell c : grid) {
            String shape = c.shape.label() + (c.run > 0 ? " (repeat " + c.run + ")" : "");
            if (c.skipped != null) {
                md.append("| ").append(shape).append(" | ").append(c.result.contender).append(" | not run: ")
                        .append(c.skipped).append(" | | | | | | | | | | | | |\n");
                continue;
            }
            CellResult r = c.result;
            ScaleGrid.Cell redisson = gridCell(c.shape.processes(), c.shape.names(), "redisson", c.run);
            long[] perProcess = c.perProcess();
            long min = java.util.Arrays.stream(perProcess).min().orElse(0);
            long max = java.util.Arrays.stream(perProcess).max().orElse(0);
            md.append("| ").append(shape).append(" | ").append(r.contender)
                    .append(String.format(Locale.ROOT, " | %,.0f | %s | %s / %s / %s | %d | %d | %,d..%,d | %.1f / %.1f s | %.2f (%.2f)",
                            r.opsPerSecond(),
                            redisson == null || redisson.skipped != null || c == redisson ? "-"
                                    : String.format(Locale.ROOT, "%.2f", r.opsPerSecond() / redisson.result.opsPerSecond()),
                            ms(r.micros(r.wait, 50)), ms(r.micros(r.wait, 99)),
                            ms(r.wait.getTotalCount() == 0 ? Double.NaN : r.wait.getMaxValue() / 1e3),
                            r.errors, r.overlaps, min, max, r.redisCpuSeconds, r.cpuNanos / 1e9, r.commandsPerOp(),
                            r.roundTripsPerOp()))
                    .append(" | ").append(c.during == null ? "-" : String.format(Locale.ROOT, "%,d, %,d; %,d (%d)",
                            c.during.channels(), c.during.patterns(), c.during.subscriptions(), c.during.subscribedClients()))
                    .append(" | ").append(mb(c.before)).append(" / ").append(mb(c.during)).append(" / ").append(mb(c.after))
                    .append(" | ").append(c.during == null ? "-" : String.format(Locale.ROOT, "%,d", c.during.keys()))
                    .append(" / ").append(c.after == null ? "-" : String.format(Locale.ROOT, "%,d", c.after.keys()))
                    .append(" | ").append(c.maxOverProcesses("jvm.threads"))
                    .append(" | ").append(c.maxOverProcesses("jvm.heapPeakMb")).append(" / ")
                    .append(c.maxOverProcesses("jvm.liveHeapMb")).append(" MB |\n");
        }
        md.append("\nRedis commands per hand-off, by command (`INFO commandstats` over the window, scripts' own calls"
                + " included):\n\n");
        for (ScaleGrid.Cell c : grid) {
            if (c.skipped == null && c.result.ops > 0) {
                md.append("- ").append(c.shape.label()).append(c.run > 0 ? " (repeat " + c.run + ")" : "").append(", ")
                        .append(c.result.contender).append(": ").append(byCommand(c.result)).append('\n');
            }
        }
        for (ScaleGrid.Cell c : grid) {
            if (c.result.firstError != null) {
                md.append("\nFirst error, ").append(c.shape.label()).append(c.run > 0 ? " (repeat " + c.run + ")" : "")
                        .append(", ").append(c.result.contender).append(": `")
                        .append(c.result.firstError).append("`\n");
            }
        }
        md.append('\n');
    }

    /** The targets of issue 28, judged on the grid's first runs (and its repeats, each on its own). */
    private void gridTargets(StringBuilder md) {
        if (grid == null) {
            return;
        }
        int runs = grid.stream().mapToInt(c -> c.run).max().orElse(0) + 1;
        for (int run = 0; run < runs; run++) {
            String tag = run == 0 ? "" : " (repeat " + run + ")";
            ScaleGrid.Cell ours = gridCell(4, 10_000, "ours", run);
            ScaleGrid.Cell ours10 = gridCell(4, 10, "ours", 0);
            ScaleGrid.Cell redisson = gridCell(4, 10_000, "redisson", run);
            if (ours == null || ours.skipped != null) {
                continue;
            }
            CellResult o = ours.result;
            md.append("| PXN 4 x 10,000").append(tag).append(": every acquisition succeeds, no overlap | ")
                    .append(String.format(Locale.ROOT, "%d errors, %d overlaps in %,d hand-offs", o.errors, o.overlaps, o.ops))
                    .append(" | ").append(mark(o.errors == 0 && o.overlaps == 0 && o.ops > 0)).append(" |\n");
            if (ours10 != null && ours10.skipped == null) {
                double p99 = o.micros(o.wait, 99);
                double p99at10 = ours10.result.micros(ours10.result.wait, 99);
                md.append("| PXN 4 x 10,000").append(tag).append(": wait p99 within 2x that of reactive-lock's 4 x 10 cell | ")
                        .append(String.format(Locale.ROOT, "%s ms vs %s ms: %.1fx", ms(p99), ms(p99at10), p99 / p99at10))
                        .append(" | ").append(mark(p99 <= 2 * p99at10)).append(" |\n");
            }
            if (redisson != null && redisson.skipped == null) {
                double x = o.opsPerSecond() / redisson.result.opsPerSecond();
                md.append("| PXN 4 x 10,000").append(tag).append(": hand-offs/s at least 1.5x Redisson's | ")
                        .append(String.format(Locale.ROOT, "%,.0f/s vs %,.0f/s (Redisson: %d errors): %.2fx", o.opsPerSecond(),
                                redisson.result.opsPerSecond(), redisson.result.errors, x))
                        .append(" | ").append(mark(x >= 1.5)).append(" |\n");
            }
        }
        for (ScaleGrid.Cell ours : grid) {
            if (ours.run > 0 || ours.shape.names() != 10 || ours.shape.processes() < 2 || !ours.contenderId.equals("ours")
                    || ours.skipped != null) {
                continue;
            }
            ScaleGrid.Cell redisson = gridCell(ours.shape.processes(), 10, "redisson", 0);
            CellResult o = ours.result;
            String in = "PXN " + ours.shape.label() + " (every hand-off between processes): ";
            if (redisson != null && redisson.skipped == null) {
                CellResult r = redisson.result;
                double x = o.opsPerSecond() / r.opsPerSecond();
                md.append("| ").append(in).append("hand-offs/s at least 1.5x Redisson's | ")
                        .append(String.format(Locale.ROOT, "%,.0f/s vs %,.0f/s: %.2fx", o.opsPerSecond(), r.opsPerSecond(), x))
                        .append(" | ").append(mark(x >= 1.5)).append(" |\n");
                md.append("| ").append(in).append("wait p99 and max below Redisson's | ")
                        .append(String.format(Locale.ROOT, "p99 %s vs %s ms, max %s vs %s ms", ms(o.micros(o.wait, 99)),
                                ms(r.micros(r.wait, 99)), ms(o.wait.getMaxValue() / 1e3), ms(r.wait.getMaxValue() / 1e3)))
                        .append(" | ").append(mark(o.micros(o.wait, 99) < r.micros(r.wait, 99)
                                && o.wait.getMaxValue() < r.wait.getMaxValue())).append(" |\n");
            }
            md.append("| ").append(in).append("acquisitions per worker within 2x of each other | ")
                    .append(String.format(Locale.ROOT, "%,d..%,d", o.minPerWorker(), o.maxPerWorker()))
                    .append(" | ").append(mark(o.minPerWorker() > 0 && o.maxPerWorker() <= 2 * o.minPerWorker())).append(" |\n");
        }
    }

    private ScaleGrid.Cell gridCell(int processes, int names, String id, int run) {
        if (grid == null) {
            return null;
        }
        return grid.stream().filter(c -> c.shape.processes() == processes && c.shape.names() == names
                && c.contenderId.equals(id) && c.run == run).findFirst().orElse(null);
    }

    private static String ms(double micros) {
        return Double.isNaN(micros) ? "-" : String.format(Locale.ROOT, micros < 10_000 ? "%.2f" : "%,.0f", micros / 1e3);
    }

    private static String mb(RedisStats.Snapshot s) {
        return s == null ? "-" : String.format(Locale.ROOT, "%.1f MB", s.usedMemory() / 1048576.0);
    }

    /** Commands per operation, by command, most first. */
    private static String byCommand(CellResult c) {
        List<String> parts = new ArrayList<>();
        c.commands.entrySet().stream()
                .sorted((a, b) -> Long.compare(b.getValue(), a.getValue()))
                .forEach(e -> parts.add(e.getKey() + " " + String.format(Locale.ROOT, "%.2f (%.2f µs)",
                        (double) e.getValue() / c.ops, (double) c.commandMicros.getOrDefault(e.getKey(), 0L) / e.getValue())));
        return String.join(", ", parts);
    }

    /** The targets of the issue "Speed at the raw floor", each with the figures it compares and whether it is met. */
    private void targets(StringBuilder md) {
        md.append("## Targets\n\n");
        md.append("Ratios of figures measured side by side in this run. A target whose cells were not run says so.\n\n");
        md.append("| target | measured | met |\n|---|---|---|\n");
        ratioTarget(md, "U1 p50 within 1.10x of the raw floor", Scenario.U1, "ours", "raw",
                x -> x.micros(x.latency, 50), 1.1, false, "%,.0f µs");
        ratioTarget(md, "U1 JVM CPU per pair within 1.2x of the raw floor", Scenario.U1, "ours", "raw",
                CellResult::cpuMicrosPerOp, 1.2, false, "%,.1f µs");
        ratioTarget(md, "U64 JVM CPU per pair within 1.2x of the raw floor", Scenario.U64, "ours", "raw",
                CellResult::cpuMicrosPerOp, 1.2, false, "%,.1f µs");
        ratioTarget(md, "U64 throughput at least 0.9x the raw floor", Scenario.U64, "ours", "raw",
                CellResult::opsPerSecond, 0.9, true, "%,.0f/s");
        ratioTarget(md, "U64 throughput at least 3x Redisson", Scenario.U64, "ours", "redisson",
                CellResult::opsPerSecond, 3, true, "%,.0f/s");
        for (Scenario scenario : List.of(Scenario.C16I, Scenario.C16X)) {
            String in = scenario + " (" + scenario.measures + "): ";
            ratioTarget(md, in + "hand-offs/s at least 1.5x Redisson", scenario, "ours", "redisson",
                    CellResult::opsPerSecond, 1.5, true, "%,.0f/s");
            ratioTarget(md, in + "wait p99 at most Redisson's", scenario, "ours", "redisson",
                    x -> x.micros(x.wait, 99) / 1e3, 1, false, "%,.1f ms");
            CellResult ours = cell(scenario, "ours");
            md.append("| ").append(in).append("at most 3 client round trips per hand-off | ");
            if (ours == null) {
                md.append("not run | - |\n");
            } else {
                md.append(String.format(Locale.ROOT, "%.2f round trips (%.2f Redis commands incl. those inside scripts)",
                        ours.roundTripsPerOp(), ours.commandsPerOp())).append(" | ").append(mark(ours.roundTripsPerOp() <= 3)).append(" |\n");
            }
        }
        for (Scenario scenario : List.of(Scenario.C16, Scenario.C16I, Scenario.C16X)) {
            ratioTarget(md, scenario + ": fair hand-offs/s within 30 % of non-fair (at least 0.7x)", scenario, "ours-fair",
                    "ours", CellResult::opsPerSecond, 0.7, true, "%,.0f/s");
        }
        for (Scenario scenario : List.of(Scenario.C16, Scenario.C16I, Scenario.C16X)) {
            ratioTarget(md, scenario + ": fair hand-offs/s at least those of Redisson's fair lock (FIFO beside FIFO)",
                    scenario, "ours-fair", "redisson-fair", CellResult::opsPerSecond, 1.0, true, "%,.0f/s");
        }
        for (Scenario scenario : List.of(Scenario.C16, Scenario.C16I, Scenario.C16X)) {
            for (String id : List.of("ours", "ours-fair")) {
                CellResult c = cell(scenario, id);
                if (c != null) {
                    md.append("| ").append(scenario).append(", ").append(c.contender).append(": no overlapping critical sections | ")
                            .append(c.overlaps).append(" overlaps in ").append(String.format(Locale.ROOT, "%,d", c.ops))
                            .append(" hand-offs | ").append(mark(c.overlaps == 0 && c.ops > 0)).append(" |\n");
                }
            }
        }
        for (Scenario scenario : Scenario.primitives()) {
            for (String id : List.of("ours", "redisson")) {
                CellResult c = cell(scenario, id);
                if (c != null && scenario.contended) {
                    md.append("| ").append(scenario).append(", ").append(c.contender).append(": ")
                            .append(scenario.workload.rule()).append(" (issue 16's checker) | ").append(c.overlaps)
                            .append(" violations in ").append(String.format(Locale.ROOT, "%,d", c.ops))
                            .append(" acquisitions | ").append(mark(c.overlaps == 0 && c.ops > 0)).append(" |\n");
                }
            }
        }
        scaleTarget(md);
        gridTargets(md);
        md.append('\n');
    }

    /** 100,000 concurrent waiters on 1,000 names drain in -Xmx256m with no error and a constant thread count. */
    private void scaleTarget(StringBuilder md) {
        md.append("| 100,000 concurrent waiters on 1,000 names drain in `-Xmx256m`, no error, constant thread count | ");
        Map<String, String> first = scale == null || scale.isEmpty() ? null : scale.get(0);
        if (first == null || !"100000".equals(first.get("waiters")) || !"1000".equals(first.get("names"))
                || !first.get("jvmArgs").contains("-Xmx256m")) {
            md.append("not run at that size").append(first == null ? "" : " (ran " + fmtInt(first.get("waiters"))
                    + " waiters on " + fmtInt(first.get("names")) + " names, `" + first.get("jvmArgs") + "`)").append(" | - |\n");
            return;
        }
        boolean ok = ScaleResult.ok(first) && first.get("threadsMin").equals(first.get("threadsMax"));
        md.append(ScaleResult.ok(first)
                        ? fmtInt(first.get("completed")) + " completed in " + first.get("seconds") + " s, threads "
                                + first.get("threadsMin") + ".." + first.get("threadsMax")
                        : ScaleResult.why(first))
                .append(" | ").append(mark(ok)).append(" |\n");
    }

    /** A target on the ratio of one figure of {@code id} to the same figure of {@code otherId} in one cell. */
    private void ratioTarget(StringBuilder md, String what, Scenario scenario, String id, String otherId,
            ToDoubleFunction<CellResult> figure, double bound, boolean atLeast, String format) {
        md.append("| ").append(what).append(" | ");
        CellResult c = cell(scenario, id);
        CellResult other = cell(scenario, otherId);
        if (c == null || other == null) {
            md.append("not run | - |\n");
            return;
        }
        double value = figure.applyAsDouble(c);
        double base = figure.applyAsDouble(other);
        double r = value / base;
        boolean met = atLeast ? r >= bound : r <= bound;
        md.append(String.format(Locale.ROOT, "%.2fx (" + format + " vs " + format + ")", r, value, base))
                .append(" | ").append(Double.isNaN(r) ? "-" : mark(met)).append(" |\n");
    }

    /** This run against {@code -Dbench.baseline}: every figure before, after and after/before. */
    private void beforeAfter(StringBuilder md) {
        md.append("## Before/after (baseline: `").append(settings.baseline).append("`)\n\n");
        md.append("Each figure as `before → after · after/before`. p50/p99 are of the pair in U cells, of the wait in"
                + " C cells. The raw floor and Redisson did not change between the runs: their ratios show how much the"
                + " machine itself drifted.\n\n");
        md.append("| cell | contender | ").append(String.join(" | ", Baseline.FIGURES)).append(" |\n|---|---|");
        md.append("---:|".repeat(Baseline.FIGURES.size())).append('\n');
        for (Scenario scenario : settings.scenarios) {
            for (String id : settings.contenders) {
                double[] before = baseline.get(scenario + "/" + id);
                if (before == null) {
                    continue;
                }
                double[] after = Baseline.figures(cell(scenario, id));
                md.append("| ").append(scenario).append(" | ").append(Contenders.IDS.get(id));
                for (int i = 0; i < after.length; i++) {
                    md.append(" | ").append(String.format(Locale.ROOT, "%,.1f → %,.1f", before[i], after[i]))
                            .append(ratio(after[i], before[i], ""));
                }
                md.append(" |\n");
            }
        }
        md.append('\n');
        beforeAfterAgainstRaw(md);
    }

    /** Each contender's figures divided by the raw floor's of the same run: what machine drift between runs moves less. */
    private void beforeAfterAgainstRaw(StringBuilder md) {
        md.append("The first four figures divided by the raw floor's of the same run and cell (less sensitive to"
                + " drift between the runs), as `before → after`:\n\n");
        md.append("| cell | contender | ").append(String.join(" ÷ raw | ", Baseline.FIGURES.subList(0, 4)))
                .append(" ÷ raw |\n|---|---|");
        md.append("---:|".repeat(4)).append('\n');
        for (Scenario scenario : settings.scenarios) {
            double[] rawBefore = baseline.get(scenario + "/raw");
            CellResult rawCell = cell(scenario, "raw");
            if (rawBefore == null || rawCell == null) {
                continue;
            }
            double[] rawAfter = Baseline.figures(rawCell);
            for (String id : settings.contenders) {
                double[] before = baseline.get(scenario + "/" + id);
                if (before == null || id.equals("raw")) {
                    continue;
                }
                double[] after = Baseline.figures(cell(scenario, id));
                md.append("| ").append(scenario).append(" | ").append(Contenders.IDS.get(id));
                for (int i = 0; i < 4; i++) {
                    md.append(" | ").append(String.format(Locale.ROOT, "%.2fx → %.2fx", before[i] / rawBefore[i],
                            after[i] / rawAfter[i]));
                }
                md.append(" |\n");
            }
        }
        md.append('\n');
    }

    private static String mark(boolean met) {
        return met ? "yes" : "**NO**";
    }

    private CellResult cell(Scenario scenario, String id) {
        return settings.scenarios.contains(scenario) && settings.contenders.contains(id)
                ? cells.get(scenario + "/" + id) : null;
    }

    private static String withRatios(CellResult c, CellResult redisson, CellResult raw,
            ToDoubleFunction<CellResult> figure, String format) {
        double value = figure.applyAsDouble(c);
        if (Double.isNaN(value)) {
            return "-";
        }
        StringBuilder s = new StringBuilder(String.format(Locale.ROOT, format, value));
        if (redisson != null && redisson != c) {
            s.append(ratio(value, figure.applyAsDouble(redisson), "R"));
        }
        if (raw != null && raw != c) {
            s.append(ratio(value, figure.applyAsDouble(raw), "raw"));
        }
        return s.toString();
    }

    private static String ratio(double value, double base, String name) {
        if (Double.isNaN(value) || Double.isNaN(base) || base == 0) {
            return "";
        }
        return String.format(Locale.ROOT, " · %.2fx%s", value / base, name);
    }

    private static String spread(CellResult c) {
        double spread = c.roundSpreadPercent();
        return Double.isNaN(spread) ? "" : String.format(Locale.ROOT, " (rounds ±%.0f%%)", spread / 2);
    }

    private static String commands(CellResult c) {
        if (c.ops == 0) {
            return "-";
        }
        return String.format(Locale.ROOT, "%.2f (%.2f)", c.commandsPerOp(), c.roundTripsPerOp());
    }

    private static String errors(CellResult c) {
        return c.errors == 0 ? "0" : "**" + c.errors + "** " + c.firstError;
    }

    private static String fmtInt(String value) {
        try {
            return String.format(Locale.ROOT, "%,d", Long.parseLong(value));
        } catch (RuntimeException e) {
            return String.valueOf(value);
        }
    }

    private static String jar(Class<?> type) {
        try {
            String path = type.getProtectionDomain().getCodeSource().getLocation().getPath();
            String file = path.substring(path.lastIndexOf('/', path.length() - 2) + 1);
            return file.endsWith(".jar") ? file.substring(0, file.length() - 4) : file;
        } catch (RuntimeException e) {
            return type.getName();
        }
    }

    private static String command() {
        String args = System.getenv("MAVEN_CMD_LINE_ARGS");
        return args == null || args.isBlank()
                ? "java " + Bench.class.getName() + " (not started by Maven)"
                : "./mvnw " + args.trim();
    }

    private static String loadAverage() {
        try {
            String[] parts = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).trim().split(" ");
            return parts[0] + "/" + parts[1] + "/" + parts[2];
        } catch (java.io.IOException | RuntimeException e) {
            return String.format(Locale.ROOT, "%.2f", java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
        }
    }

    private static String cpuModel() {
        try {
            for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("model name")) {
                    return line.substring(line.indexOf(':') + 1).trim();
                }
            }
        } catch (java.io.IOException | RuntimeException e) {
            // not Linux
        }
        return System.getProperty("os.arch");
    }
}
