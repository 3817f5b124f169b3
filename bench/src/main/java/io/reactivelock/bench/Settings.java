package io.reactivelock.bench;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** The knobs, all system properties (the bench profile passes them through from {@code -D}). */
final class Settings {

    final long jitWarmupMillis;
    final long warmupMillis;
    final long measureMillis;
    final int rounds;
    final List<Scenario> scenarios;
    final List<String> contenders;
    final int scaleWaiters;
    final int scaleNames;
    /** Locks held at once in the memory cell; 0 skips it. */
    final int memoryNames;
    final long scaleTimeoutSeconds;
    final String scaleJvmArgs;
    final String forkJvmArgs;
    final long forkJitWarmupMillis;
    final Path out;
    final Path baseline;
    /** {@code PXN} in bench.scenarios: the {@link ScaleGrid}. Its bench.pxn.* knobs are not in the pom: pass them in bench.jvmArgs. */
    final boolean pxn;
    final List<Integer> pxnProcesses;
    final List<Integer> pxnNames;
    final int pxnWaitersPerName;
    final long pxnHoldMillis;
    /** A blocking contender's grid cell is skipped where one process would need more threads than this. */
    final int pxnMaxThreads;
    /** Acquisitions per second each grid cell asks for in all ({@link ScaleGrid.Shape#rate()}); 0: a closed loop. */
    final int pxnRate;
    /** Shapes run once more after the grid, as {@code PxN}: {@code 4x10000}. */
    final List<String> pxnRepeat;

    Settings() {
        jitWarmupMillis = millis("bench.jitWarmup", "3");
        warmupMillis = millis("bench.warmup", "1");
        measureMillis = millis("bench.measure", "4");
        rounds = Integer.parseInt(prop("bench.rounds", "2"));
        scenarios = new ArrayList<>();
        boolean grid = false;
        for (String s : list("bench.scenarios", "U1,U64,C16")) {
            if (s.equals("none")) {
                continue;
            }
            if (s.equalsIgnoreCase("pxn")) {
                grid = true;
                continue;
            }
            if (s.equals("primitives")) {
                scenarios.addAll(Scenario.primitives());
                continue;
            }
            scenarios.add(Scenario.valueOf(s.toUpperCase(java.util.Locale.ROOT)));
        }
        List<String> ids = list("bench.contenders", "all");
        contenders = ids.equals(List.of("all")) ? Contenders.ORDER : ids.equals(List.of("none")) ? List.of() : ids;
        for (String id : contenders) {
            if (!Contenders.IDS.containsKey(id)) {
                throw new IllegalArgumentException("unknown contender '" + id + "', known: " + new java.util.TreeSet<>(Contenders.IDS.keySet()));
            }
        }
        scaleWaiters = Integer.parseInt(prop("bench.scale.waiters", "100000"));
        scaleNames = Integer.parseInt(prop("bench.scale.names", "1000"));
        memoryNames = Integer.parseInt(prop("bench.memory.names", "10000"));
        scaleTimeoutSeconds = Long.parseLong(prop("bench.scale.timeout", "150"));
        scaleJvmArgs = prop("bench.scale.jvmArgs", "-Xmx256m");
        forkJvmArgs = prop("bench.fork.jvmArgs", "-Xms256m -Xmx256m");
        forkJitWarmupMillis = millis("bench.fork.jitWarmup", "8");
        out = Path.of(prop("bench.out", "target/bench"));
        String before = prop("bench.baseline", "");
        baseline = before.isEmpty() ? null : Path.of(before);
        pxn = grid;
        pxnProcesses = list("bench.pxn.procs", "1,2,4").stream().map(Integer::valueOf).toList();
        pxnNames = list("bench.pxn.names", "10,1000,10000").stream().map(Integer::valueOf).toList();
        pxnWaitersPerName = Integer.parseInt(prop("bench.pxn.waiters", "2"));
        pxnHoldMillis = Long.parseLong(prop("bench.pxn.hold", "2"));
        pxnMaxThreads = Integer.parseInt(prop("bench.pxn.maxThreads", "2000"));
        pxnRate = Integer.parseInt(prop("bench.pxn.rate", "0"));
        pxnRepeat = list("bench.pxn.repeat", "").stream().filter(r -> !r.equals("none")).toList();
    }

    private static String prop(String name, String fallback) {
        String value = System.getProperty(name);
        return value == null || value.isBlank() ? fallback : value.trim();
    }

    private static long millis(String name, String fallbackSeconds) {
        return Math.round(Double.parseDouble(prop(name, fallbackSeconds)) * 1000);
    }

    private static List<String> list(String name, String fallback) {
        return Arrays.stream(prop(name, fallback).split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
    }

    String describe() {
        return "JIT warm-up pass " + jitWarmupMillis / 1000.0 + " s per cell, then " + rounds + " round(s) of "
                + warmupMillis / 1000.0 + " s warm-up + " + measureMillis / 1000.0 + " s measurement per cell";
    }
}
