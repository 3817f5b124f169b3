package io.reactivelock.bench;

import java.util.Map;
import java.util.TreeMap;
import org.HdrHistogram.Histogram;

/** The figures of one (scenario, contender) cell, summed over its rounds. */
final class CellResult {

    final Scenario scenario;
    final String contender;
    final Histogram latency = new Histogram(3);
    final Histogram wait = new Histogram(3);
    final long[] perWorker;
    final Map<String, Long> commands = new TreeMap<>();
    long ops;
    long nanos;
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
    final java.util.List<Double> roundRates = new java.util.ArrayList<>();

    CellResult(Scenario scenario, String contender) {
        this.scenario = scenario;
        this.contender = contender;
        this.perWorker = new long[scenario.workers];
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
