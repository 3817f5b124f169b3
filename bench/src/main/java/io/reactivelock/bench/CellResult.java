package io.reactivelock.bench;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.DataFormatException;
import org.HdrHistogram.Histogram;

/** The figures of one (scenario, contender) cell, summed over its rounds. */
final class CellResult {

    final Scenario scenario;
    final String contender;
    final Histogram latency = new Histogram(3);
    final Histogram wait = new Histogram(3);
    final long[] perWorker;
    final Map<String, Long> commands = new TreeMap<>();
    /** Redis's execution time per command, µs (INFO commandstats usec). */
    final Map<String, Long> commandMicros = new TreeMap<>();
    long ops;
    long nanos;
    long lastRoundNanos;
    long cpuNanos;
    double redisCpuSeconds;
    long allocatedBytes;
    long gcMillis;
    long jitMillis;
    long monitorClient;
    long monitorLua;
    int peakThreads;
    long errors;
    long overlaps;
    long switches;
    int rounds;
    String firstError;
    final List<Double> roundRates = new ArrayList<>();

    CellResult(Scenario scenario, String contender) {
        this(scenario, contender, scenario.workers);
    }

    /** A cell that is no {@link Scenario} (null): one of the {@link ScaleGrid}'s, with {@code workers} workers. */
    CellResult(Scenario scenario, String contender, int workers) {
        this.scenario = scenario;
        this.contender = contender;
        this.perWorker = new long[workers];
    }

    /**
     * The figures one JVM measures of its workers ({@link Round#addTo}), as text for the parent of
     * a cell in forked JVMs; overlaps and changes of holder are left out (only the parent, with
     * every JVM's critical sections, can count them).
     */
    Map<String, String> jvmFigures() {
        Map<String, String> figures = new LinkedHashMap<>();
        figures.put("ops", Long.toString(ops));
        figures.put("cpuNanos", Long.toString(cpuNanos));
        figures.put("allocatedBytes", Long.toString(allocatedBytes));
        figures.put("gcMillis", Long.toString(gcMillis));
        figures.put("jitMillis", Long.toString(jitMillis));
        figures.put("peakThreads", Integer.toString(peakThreads));
        figures.put("errors", Long.toString(errors));
        figures.put("perWorker", Arrays.toString(perWorker).replaceAll("[\\[\\] ]", ""));
        figures.put("latency", encode(latency));
        figures.put("wait", encode(wait));
        if (firstError != null) {
            figures.put("firstError", firstError);
        }
        return figures;
    }

    /** Adds what one forked JVM reported ({@link #jvmFigures}); returns its operations. */
    long addJvmFigures(Map<String, String> figures) {
        long jvmOps = Long.parseLong(figures.get("ops"));
        ops += jvmOps;
        cpuNanos += Long.parseLong(figures.get("cpuNanos"));
        allocatedBytes += Long.parseLong(figures.get("allocatedBytes"));
        gcMillis += Long.parseLong(figures.get("gcMillis"));
        jitMillis += Long.parseLong(figures.get("jitMillis"));
        peakThreads = Math.max(peakThreads, Integer.parseInt(figures.get("peakThreads")));
        errors += Long.parseLong(figures.get("errors"));
        String[] counts = figures.get("perWorker").split(",");
        for (int w = 0; w < perWorker.length; w++) {
            perWorker[w] += Long.parseLong(counts[w]);
        }
        latency.add(decode(figures.get("latency")));
        wait.add(decode(figures.get("wait")));
        if (firstError == null) {
            firstError = figures.get("firstError");
        }
        return jvmOps;
    }

    private static String encode(Histogram histogram) {
        ByteBuffer buffer = ByteBuffer.allocate(histogram.getNeededByteBufferCapacity());
        int length = histogram.encodeIntoCompressedByteBuffer(buffer);
        return Base64.getEncoder().encodeToString(Arrays.copyOf(buffer.array(), length));
    }

    private static Histogram decode(String text) {
        try {
            return Histogram.decodeFromCompressedByteBuffer(ByteBuffer.wrap(Base64.getDecoder().decode(text)), 0);
        } catch (DataFormatException e) {
            throw new IllegalStateException("unreadable histogram from a forked JVM", e);
        }
    }

    /** Spread of the per-round rates, (max - min) / mean, in percent; NaN with one round. */
    double roundSpreadPercent() {
        if (roundRates.size() < 2) {
            return Double.NaN;
        }
        double min = Double.MAX_VALUE;
        double max = 0;
        double sum = 0;
        for (double r : roundRates) {
            min = Math.min(min, r);
            max = Math.max(max, r);
            sum += r;
        }
        return sum == 0 ? Double.NaN : (max - min) * 100 / (sum / roundRates.size());
    }

    double opsPerSecond() {
        return nanos == 0 ? 0 : ops * 1e9 / nanos;
    }

    /** Microseconds of this JVM's CPU time per operation. */
    double cpuMicrosPerOp() {
        return ops == 0 ? Double.NaN : cpuNanos / 1e3 / ops;
    }

    /** Microseconds of redis-server CPU time per operation. */
    double redisCpuMicrosPerOp() {
        return ops == 0 ? Double.NaN : redisCpuSeconds * 1e6 / ops;
    }

    double bytesPerOp() {
        return ops == 0 || allocatedBytes < 0 ? Double.NaN : (double) allocatedBytes / ops;
    }

    long totalCommands() {
        return commands.values().stream().mapToLong(Long::longValue).sum();
    }

    /** Every command Redis executed (scripts' own calls included), per operation. */
    double commandsPerOp() {
        return ops == 0 ? Double.NaN : (double) totalCommands() / ops;
    }

    /** Commands sent by the client per operation: the Lua-internal share (sampled by MONITOR) removed. */
    double roundTripsPerOp() {
        long sampled = monitorClient + monitorLua;
        if (ops == 0 || sampled == 0) {
            return Double.NaN;
        }
        return commandsPerOp() * monitorClient / sampled;
    }

    /** The latency that sums a cell up: of the whole pair when uncontended, of the wait for the lock when contended. */
    Histogram headline() {
        return scenario.contended ? wait : latency;
    }

    double micros(Histogram h, double percentile) {
        return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(percentile) / 1e3;
    }

    long minPerWorker() {
        long min = Long.MAX_VALUE;
        for (long n : perWorker) {
            min = Math.min(min, n);
        }
        return min;
    }

    long maxPerWorker() {
        long max = 0;
        for (long n : perWorker) {
            max = Math.max(max, n);
        }
        return max;
    }
}
