package io.reactivelock.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The scale grid (issue 28, {@code -Dbench.scenarios=PXN}): P processes (forked JVMs, each with
 * its own instance of the contender: its own client, as services have) × N names, with W waiters
 * per name in all, spread over the processes so that the waiters of one name sit in different
 * processes wherever P allows it. Every waiter loops: ask for its name's lock, hold it for a few
 * milliseconds on a timer, release; in a paced grid ({@code bench.pxn.rate}) it pauses between pairs. Each cell is measured like a C16X cell (the {@link ForkedWorkers}
 * protocol, {@link RedisStats} around the window, {@link Intervals} checked for overlaps, per name),
 * and Redis, emptied before each cell, is sampled for memory, keys and subscriptions at the end of
 * the warm-up and after the processes have exited.
 *
 * <p>Worker {@code g} of the cell ({@code 0 <= g < N*W}) takes name {@code g % N}; process
 * {@code p} runs the workers {@code [p*N*W/P, (p+1)*N*W/P)}. With W = 2 and P = 2 or 4 the two
 * waiters of every name are in two different processes, so every hand-off crosses processes.
 */
final class ScaleGrid {

    private ScaleGrid() {}

    /**
     * One cell's shape: processes, names, waiters per name (in all processes together), hold time,
     * and the pace: 0 for waiters that ask again as soon as they released (a closed loop: the cell
     * runs at whatever rate the contender sustains), else the acquisitions per second the whole cell
     * asks for, each waiter pausing a random time between pairs (exponential, mean
     * {@link #thinkMeanNanos()}), so that cells of any name count carry the same offered load.
     */
    record Shape(int processes, int names, int waitersPerName, long holdMillis, int rate) {

        private static final String PREFIX = "PXN:";

        int workers() {
            return names * waitersPerName;
        }

        /** Each waiter's mean pause between pairs: workers / rate; 0 in a closed loop. */
        long thinkMeanNanos() {
            return rate == 0 ? 0 : workers() * 1_000_000_000L / rate;
        }

        int firstWorker(int process) {
            return (int) ((long) process * workers() / processes);
        }

        int workersOf(int process) {
            return firstWorker(process + 1) - firstWorker(process);
        }

        long nameOf(long worker) {
            return worker % names;
        }

        /** What worker {@code firstWorker(process) + w} of this process takes, for each of its workers, under {@code key}. */
        List<List<Workload.Acquisition>> choices(String key, int process) {
            List<List<Workload.Acquisition>> choices = new ArrayList<>();
            int first = firstWorker(process);
            for (int w = 0; w < workersOf(process); w++) {
                choices.add(Workload.LOCK.choices(key + ":" + nameOf(first + w), true));
            }
            return choices;
        }

        /** The shape as one argument of a forked JVM. */
        String spec() {
            return PREFIX + processes + ":" + names + ":" + waitersPerName + ":" + holdMillis + ":" + rate;
        }

        static boolean isSpec(String text) {
            return text.startsWith(PREFIX);
        }

        static Shape parse(String spec) {
            String[] parts = spec.substring(PREFIX.length()).split(":");
            return new Shape(Integer.parseInt(parts[0]), Integer.parseInt(parts[1]), Integer.parseInt(parts[2]),
                    Long.parseLong(parts[3]), Integer.parseInt(parts[4]));
        }

        String label() {
            return String.format(Locale.ROOT, "%d x %,d", processes, names) + (rate == 0 ? "" : String.format(Locale.ROOT, " at %,d/s", rate));
        }
    }

    /** One cell's figures: the merged {@link CellResult}, each process's own, and the Redis samples. */
    static final class Cell {
        final Shape shape;
        final String contenderId;
        /** 0 for the first run of a shape, 1 for its repeat, ... */
        final int run;
        final CellResult result;
        final List<Map<String, String>> processes = new ArrayList<>();
        /** Why the cell was not run, or null. */
        String skipped;
        RedisStats.Snapshot before;
        RedisStats.Snapshot during;
        RedisStats.Snapshot after;

        Cell(Shape shape, String contenderId, int run) {
            this.shape = shape;
            this.contenderId = contenderId;
            this.run = run;
            this.result = new CellResult(null, Contenders.IDS.get(contenderId), shape.workers());
        }

        /** Acquisitions of each process in the window, from the per-worker counts. */
        long[] perProcess() {
            long[] out = new long[shape.processes()];
            for (int p = 0; p < out.length; p++) {
                for (int w = shape.firstWorker(p); w < shape.firstWorker(p + 1); w++) {
                    out[p] += result.perWorker[w];
                }
            }
            return out;
        }

        /** The largest of one figure over the processes ({@link ForkedWorkers}' {@code jvm.*} lines), -1 if none. */
        long maxOverProcesses(String key) {
            long max = -1;
            for (Map<String, String> p : processes) {
                if (p.containsKey(key)) {
                    max = Math.max(max, Long.parseLong(p.get(key)));
                }
            }
            return max;
        }
    }

    /** Runs every cell the settings ask for, shape by shape with the contenders side by side, then the repeats. */
    static List<Cell> run(Settings settings, CellRunner runner, RedisStats stats) {
        List<Cell> cells = new ArrayList<>();
        List<Shape> shapes = new ArrayList<>();
        for (int names : settings.pxnNames) {
            for (int processes : settings.pxnProcesses) {
                shapes.add(new Shape(processes, names, settings.pxnWaitersPerName, settings.pxnHoldMillis, settings.pxnRate));
            }
        }
        for (Shape shape : shapes) {
            for (String id : settings.contenders) {
                cells.add(runCell(settings, runner, stats, shape, id, 0));
            }
        }
        for (String repeat : settings.pxnRepeat) {
            String[] pn = repeat.split("x");
            Shape shape = new Shape(Integer.parseInt(pn[0]), Integer.parseInt(pn[1]), settings.pxnWaitersPerName,
                    settings.pxnHoldMillis, settings.pxnRate);
            for (String id : settings.contenders) {
                int run = (int) cells.stream().filter(c -> c.shape.equals(shape) && c.contenderId.equals(id)).count();
                cells.add(runCell(settings, runner, stats, shape, id, run));
            }
        }
        return cells;
    }

    private static Cell runCell(Settings settings, CellRunner runner, RedisStats stats, Shape shape, String id, int run) {
        Cell cell = new Cell(shape, id, run);
        int widest = shape.workersOf(0);
        if (Contenders.create(id, null).blocking() && widest > settings.pxnMaxThreads) {
            cell.skipped = String.format(Locale.ROOT, "blocking: a thread per waiter, %,d in one process (more than"
                    + " bench.pxn.maxThreads=%,d)", widest, settings.pxnMaxThreads);
            Bench.progress("PXN " + shape.label() + " " + id + ": skipped, " + cell.skipped);
            return cell;
        }
        // Each cell on an empty server, so that its keys and memory are its own (the grid runs after the other cells).
        stats.flushAll();
        cell.before = stats.snapshot();
        runner.runGrid(shape, id, cell.result, cell.processes, () -> cell.during = stats.snapshot());
        cell.after = stats.snapshot();
        CellResult r = cell.result;
        Bench.progress(String.format(Locale.ROOT,
                "PXN %-9s %-13s %8.0f hand-offs/s  wait p50 %7.1f p99 %8.1f max %8.1f ms  errors %d  overlaps %d"
                        + "  cmds/hand-off %.1f  subs %d (%d channels)  keys %d  %s",
                shape.label(), id, r.opsPerSecond(), r.micros(r.wait, 50) / 1e3, r.micros(r.wait, 99) / 1e3,
                r.wait.getTotalCount() == 0 ? Double.NaN : r.wait.getMaxValue() / 1e6, r.errors, r.overlaps,
                r.commandsPerOp(), cell.during == null ? -1 : cell.during.subscriptions(),
                cell.during == null ? -1 : cell.during.channels(), cell.during == null ? -1 : cell.during.keys(),
                r.firstError == null ? "" : r.firstError));
        return cell;
    }
}
