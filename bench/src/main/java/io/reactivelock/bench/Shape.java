package io.reactivelock.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Where the run's processes run: unpinned (redis-server and the client JVMs share every CPU), or
 * pinned with {@code taskset -c} ({@code -Dbench.cpus.redis=0 -Dbench.cpus.client=1}), each side on
 * CPUs of its own, so that the chain of steps of one acquisition shows on a 2-core machine instead
 * of hiding behind two processes taking turns on both cores. The client side is this JVM, started
 * again under {@code taskset} so that it sizes its GC, JIT and Reactor/Lettuce threads for its
 * CPUs, and every JVM it forks (C16X, PXN, the scale cell), which inherits them; redis-server is
 * pinned with {@code taskset -a -p} once started. Linux only; what the report states is read back
 * from {@code /proc}, not assumed.
 */
final class Shape {

    /** Set on the JVM started under taskset, so that it does not start itself again. */
    private static final String APPLIED = "bench.cpus.applied";

    private final String redisCpus;
    private final String clientCpus;
    private String redisAllowed = "";

    private Shape(String redisCpus, String clientCpus) {
        this.redisCpus = redisCpus;
        this.clientCpus = clientCpus;
    }

    static Shape fromProperties() {
        return new Shape(property("bench.cpus.redis"), property("bench.cpus.client"));
    }

    private static String property(String name) {
        String value = System.getProperty(name, "").trim();
        return value.isEmpty() ? null : value;
    }

    /**
     * When the client is to be pinned and this JVM is not the pinned one yet: runs the same command
     * under {@code taskset -c} and returns its exit code; otherwise -1 (this JVM runs the bench).
     */
    int runPinnedClient(Class<?> main, String[] args) throws IOException, InterruptedException {
        if (clientCpus == null || Boolean.getBoolean(APPLIED)) {
            return -1;
        }
        List<String> command = new ArrayList<>(List.of("taskset", "-c", clientCpus,
                Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        command.addAll(java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments());
        command.add("-D" + APPLIED + "=true");
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
        command.addAll(List.of(args));
        Bench.progress("client JVM on CPU(s) " + clientCpus + ": " + String.join(" ", command.subList(0, 4)) + " ...");
        return new ProcessBuilder(command).inheritIO().start().waitFor();
    }

    /** Pins the started redis-server (all its threads), when asked to. */
    void pinRedis(RedisStats redis) throws IOException, InterruptedException {
        String pid = redis.info("server", "process_id");
        if (redisCpus != null) {
            Process taskset = new ProcessBuilder("taskset", "-a", "-p", "-c", redisCpus, pid)
                    .redirectErrorStream(true).start();
            String output = new String(taskset.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (taskset.waitFor() != 0) {
                throw new IllegalStateException("taskset -a -p -c " + redisCpus + " " + pid + " failed: " + output);
            }
        }
        redisAllowed = cpusAllowed(pid);
    }

    /** The shape, in one line, for the report and the progress log. */
    String describe() {
        String sides = "redis-server on CPU(s) " + redisAllowed + ", the client JVM(s) on CPU(s) " + cpusAllowed("self");
        return (redisCpus == null && clientCpus == null ? "unpinned (every process on every CPU): " : "pinned (taskset -c): ")
                + sides + "; CPUs online " + online();
    }

    /** The shape in a few words, for the chart's caption. */
    String caption() {
        return redisCpus == null && clientCpus == null ? "unpinned"
                : "pinned: Redis CPU " + redisAllowed + ", client CPU " + cpusAllowed("self");
    }

    /** The CPUs online, as the kernel lists them ({@code 0-15}); the JVM's own count follows its pinning. */
    static String online() {
        return read(Path.of("/sys/devices/system/cpu/online"));
    }

    /** The {@code Cpus_allowed_list} of a process ({@code self} for this JVM's main thread). */
    private static String cpusAllowed(String pid) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc", pid, "status"))) {
                if (line.startsWith("Cpus_allowed_list:")) {
                    return line.substring(line.indexOf(':') + 1).trim();
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux
        }
        return "?";
    }

    private static String read(Path file) {
        try {
            return Files.readString(file).trim();
        } catch (IOException | RuntimeException e) {
            return "?";
        }
    }
}
