package io.reactivelock.bench;

import io.lettuce.core.RedisURI;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The workers one forked JVM contributes to a cell that spans processes, and ({@link Jvm}) the
 * parent's handle on such a JVM.
 *
 * <p>Protocol, one line each: the child first warms its JIT up for the given time with its own
 * workers contending on a lock of its own (the same code paths at this JVM's own pace: a JVM
 * warmed up only on the shared lock would compile under the measurement, more so the slower its
 * share of the hand-offs), then starts its workers on the shared lock and prints {@code READY}
 * once one of them has completed a pair (or after two minutes, with none); the parent
 * writes {@code BEGIN} and {@code END} around the measured window; the child then stops its
 * workers, writes the critical sections it measured to its file, prints {@code RESULT key=value}
 * lines and {@code DONE}, and exits. A closed standard input (the parent is gone) ends the child.
 */
public final class ForkedWorkers {

    private ForkedWorkers() {}

    /**
     * Arguments: redis host, port, cell (a {@link Scenario} or a {@link ScaleGrid.Shape#spec()}),
     * contender id, index of this JVM, lock key, sections file, JIT warm-up ms.
     */
    public static void main(String[] args) throws IOException {
        RedisURI uri = RedisURI.create(args[0], Integer.parseInt(args[1]));
        Contender contender = Contenders.create(args[3], uri);
        int index = Integer.parseInt(args[4]);
        String key = args[5];
        Intervals sections = new Intervals();
        ThreadPoolExecutor hopExecutor = Threads.hopExecutor();
        Round warmUp;
        Round round;
        CellResult result;
        if (ScaleGrid.Shape.isSpec(args[2])) {
            ScaleGrid.Shape shape = ScaleGrid.Shape.parse(args[2]);
            int first = shape.firstWorker(index);
            warmUp = new Round(contender, 1, first, true, shape.choices(key + ":jit-warm-up-" + index, index),
                    shape.holdMillis(), 0, hopExecutor, null); // unpaced: the JIT warm-up wants every path hot
            round = new Round(contender, 1, first, true, shape.choices(key, index), shape.holdMillis(),
                    shape.thinkMeanNanos(), hopExecutor, sections);
            result = new CellResult(null, contender.name(), shape.workers());
        } else {
            Scenario scenario = Scenario.valueOf(args[2]);
            int workers = scenario.workersPerJvm();
            warmUp = new Round(contender, workers, scenario.instances, index * workers, true, scenario.workload,
                    key + ":jit-warm-up-" + index, hopExecutor, null);
            round = new Round(contender, workers, scenario.instances, index * workers, true, scenario.workload,
                    key, hopExecutor, sections);
            result = new CellResult(scenario, contender.name());
        }
        warmUp.start();
        Threads.sleep(Long.parseLong(args[7]));
        warmUp.stop();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        round.start();
        // Ready once this JVM has had the lock: its classes are loaded and its connections are up.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Jvm.START_SECONDS);
        while (round.completed() == 0 && System.nanoTime() < deadline) {
            Threads.sleep(10);
        }
        System.out.println("READY");
        System.out.flush();
        expect(in, "BEGIN");
        AtomicLong heapPeak = new AtomicLong();
        Thread heapSampler = new Thread(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                heapPeak.accumulateAndGet(JvmProbe.heapUsed(), Math::max);
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "heap-sampler");
        heapSampler.setDaemon(true);
        heapSampler.start();
        round.begin();
        expect(in, "END");
        round.end();
        heapSampler.interrupt();
        // This JVM's own figures (not summed over JVMs): live threads and heap at the end of the
        // window, the heap's peak in it, and the live heap after a full collection.
        Map<String, String> own = new LinkedHashMap<>();
        own.put("jvm.threads", Integer.toString(JvmProbe.liveThreads()));
        own.put("jvm.heapPeakMb", Long.toString(heapPeak.get() >> 20));
        System.gc();
        own.put("jvm.liveHeapMb", Long.toString(JvmProbe.heapUsed() >> 20));
        round.stop();
        sections.writeTo(Path.of(args[6]));
        round.addTo(result);
        result.jvmFigures().forEach((k, value) -> System.out.println("RESULT " + k + "=" + value));
        own.forEach((k, value) -> System.out.println("RESULT " + k + "=" + value));
        System.out.println("DONE");
        System.out.flush();
        hopExecutor.shutdownNow();
        System.exit(0);
    }

    private static void expect(BufferedReader in, String command) throws IOException {
        String line = in.readLine();
        if (!command.equals(line)) {
            System.err.println("[fork] expected " + command + ", got " + line + "; exiting");
            System.exit(1);
        }
    }

    /** The parent's handle on one forked JVM: its standard input, and its output lines in a queue. */
    static final class Jvm implements AutoCloseable {
        private static final long START_SECONDS = 120;
        private static final long RESULT_SECONDS = 90;

        private final Process process;
        private final Writer stdin;
        private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        private final String name;
        private volatile boolean outputEnded;

        private Jvm(Process process, String name) {
            this.process = process;
            this.name = name;
            this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
            Threads.named(name + "-out-", true).newThread(this::readOutput).start();
            Threads.named(name + "-err-", true).newThread(this::copyErrors).start();
        }

        /** Starts a JVM of {@code cell}: a {@link Scenario}'s name or a {@link ScaleGrid.Shape#spec()}. */
        static Jvm start(String jvmArgs, RedisURI uri, String cell, String contenderId, int index, String key,
                Path sections, long jitWarmupMillis) throws IOException {
            List<String> command = new ArrayList<>();
            command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            command.addAll(Arrays.asList(jvmArgs.trim().split("\\s+")));
            command.addAll(List.of("-cp", System.getProperty("java.class.path"), ForkedWorkers.class.getName(),
                    uri.getHost(), Integer.toString(uri.getPort()), cell, contenderId,
                    Integer.toString(index), key, sections.toString(), Long.toString(jitWarmupMillis)));
            Process process = new ProcessBuilder(command).start();
            return new Jvm(process, "fork" + index);
        }

        private void readOutput() {
            try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = out.readLine()) != null) {
                    if (line.equals("READY") || line.equals("DONE") || line.startsWith("RESULT ")) {
                        lines.add(line);
                    } else {
                        System.err.println("[" + name + "] " + line);
                    }
                }
            } catch (IOException e) {
                System.err.println("[" + name + "] output: " + e);
            } finally {
                outputEnded = true;
            }
        }

        /** Copies the JVM's standard error to this one's, without SLF4J's start-up notes (this JVM prints them once). */
        private void copyErrors() {
            try (BufferedReader err = new BufferedReader(new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = err.readLine()) != null) {
                    if (!line.startsWith("SLF4J: ")) {
                        System.err.println("[" + name + "] " + line);
                    }
                }
            } catch (IOException e) {
                System.err.println("[" + name + "] standard error: " + e);
            }
        }

        void awaitReady() {
            String line = next(START_SECONDS);
            if (!"READY".equals(line)) {
                throw new IllegalStateException(name + " did not start: " + line);
            }
        }

        void send(String command) {
            try {
                stdin.write(command + "\n");
                stdin.flush();
            } catch (IOException e) {
                throw new UncheckedIOException(name + " cannot be told " + command, e);
            }
        }

        /** The {@code RESULT} lines up to {@code DONE}, as a map. */
        Map<String, String> awaitResult() {
            Map<String, String> result = new LinkedHashMap<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(RESULT_SECONDS);
            while (true) {
                String line = next(Math.max(1, TimeUnit.NANOSECONDS.toSeconds(deadline - System.nanoTime())));
                if ("DONE".equals(line)) {
                    return result;
                }
                if (line == null || !line.startsWith("RESULT ")) {
                    throw new IllegalStateException(name + " reported no result (got " + line + ")");
                }
                int eq = line.indexOf('=');
                result.put(line.substring("RESULT ".length(), eq), line.substring(eq + 1));
            }
        }

        /** The next protocol line, or a description of why there is none within {@code seconds}. */
        private String next(long seconds) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            try {
                while (System.nanoTime() < deadline) {
                    String line = lines.poll(100, TimeUnit.MILLISECONDS);
                    if (line != null) {
                        return line;
                    }
                    if (outputEnded && lines.isEmpty()) {
                        return "no more output, exit code " + process.waitFor();
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return "nothing within " + seconds + " s";
        }

        /** Waits for the JVM to exit (it does after {@code DONE}, or when its input closes), killing it after 30 s. */
        @Override
        public void close() {
            try {
                stdin.close();
            } catch (IOException e) {
                // it has exited already
            }
            try {
                if (!process.waitFor(30, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                process.destroyForcibly();
            }
        }
    }
}
