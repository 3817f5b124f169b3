package io.reactivelock.nemesis;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;

/**
 * Watches one JVM of the run for stalls, so that a bound missed during one can be told apart from
 * the library's doing: a <em>process</em> stall (a thread of its own woke up late: the JVM did not
 * run, starved of CPU, in a GC pause or frozen) and a <em>timers</em> stall (Reactor's parallel
 * scheduler, which runs the library's timers, fired none while the process ran: its threads were
 * blocked or busy). Each stall longer than {@link #THRESHOLD} is reported once it ends, with the GC
 * time spent in it and, for a timers stall, what the scheduler's and Lettuce's threads were doing.
 */
final class StallWatch implements AutoCloseable {

    static final Duration THRESHOLD = Duration.ofMillis(250);
    private static final long TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

    /** Where stalls go: {@code kind} is {@code process} or {@code timers}; times are {@link System#nanoTime()}. */
    interface Sink {
        void stall(String kind, long from, long to, long gcMillis, String stacks);
    }

    private volatile long lastBeat = System.nanoTime();
    private volatile boolean closed;
    private final Disposable beat = Flux.interval(Duration.ofNanos(TICK_NANOS)).subscribe(tick -> lastBeat = System.nanoTime());
    private final Thread thread;

    private StallWatch(Sink sink) {
        thread = new Thread(() -> run(sink), "nemesis-stall-watch");
        thread.setDaemon(true);
        thread.start();
    }

    /** Starts watching this JVM on a daemon thread of its own, until closed. */
    static StallWatch start(Sink sink) {
        return new StallWatch(sink);
    }

    /** Stops watching; a stall under way is not reported. */
    @Override
    public void close() {
        closed = true;
        beat.dispose();
        try {
            thread.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void run(Sink sink) {
        long threshold = THRESHOLD.toNanos();
        long last = System.nanoTime();
        long gcAtLast = gcMillis();
        long runningSince = last;
        long timersStalledSince = -1;
        long gcAtTimersStall = 0;
        String stacks = "";
        while (!closed) {
            // The watch's own tick: how late it wakes is how long the process did not run.
            LockSupport.parkNanos(TICK_NANOS);
            long now = System.nanoTime();
            long gc = gcMillis();
            if (now - last > threshold + TICK_NANOS) {
                sink.stall("process", last, now, gc - gcAtLast, "");
                runningSince = now;
            }
            long beat = lastBeat;
            if (timersStalledSince < 0 && now - beat > threshold && now - runningSince > threshold) {
                timersStalledSince = beat;
                gcAtTimersStall = gc;
                stacks = stacks();
            } else if (timersStalledSince >= 0 && now - beat <= threshold) {
                sink.stall("timers", timersStalledSince, beat, gc - gcAtTimersStall, stacks);
                timersStalledSince = -1;
            }
            last = now;
            gcAtLast = gc;
        }
    }

    private static long gcMillis() {
        return ManagementFactory.getGarbageCollectorMXBeans().stream().mapToLong(GarbageCollectorMXBean::getCollectionTime).sum();
    }

    /** The stacks of Reactor's parallel threads and Lettuce's event loops. */
    private static String stacks() {
        StringBuilder out = new StringBuilder();
        for (Map.Entry<Thread, StackTraceElement[]> thread : Thread.getAllStackTraces().entrySet()) {
            String name = thread.getKey().getName();
            if (name.startsWith("parallel-") || name.startsWith("lettuce-")) {
                out.append('"').append(name).append("\" ").append(thread.getKey().getState()).append('\n');
                for (StackTraceElement frame : thread.getValue()) {
                    out.append("    at ").append(frame).append('\n');
                }
            }
        }
        return out.toString();
    }
}
