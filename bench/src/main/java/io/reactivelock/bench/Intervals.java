package io.reactivelock.bench;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongUnaryOperator;

/**
 * The critical sections of a cell whose workers live in several JVMs: each JVM records (worker,
 * entered, left) with {@link System#nanoTime()}, which on Linux reads one monotonic clock for
 * every process, and the parent merges the files to find overlaps and hand-offs between workers,
 * per lock where the workers take several ({@link ScaleGrid}).
 */
final class Intervals {

    private long[] entries = new long[3 * 4096];
    private int size;
    private volatile boolean recording;

    void recording(boolean on) {
        recording = on;
    }

    /** Records one critical section (called inside it, so calls do not contend unless the lock is broken). */
    synchronized void add(int worker, long entered, long left) {
        if (!recording) {
            return;
        }
        if (size + 3 > entries.length) {
            entries = Arrays.copyOf(entries, entries.length * 2);
        }
        entries[size++] = worker;
        entries[size++] = entered;
        entries[size++] = left;
    }

    synchronized void writeTo(Path file) throws IOException {
        try (DataOutputStream out = new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(file)))) {
            for (int i = 0; i < size; i++) {
                out.writeLong(entries[i]);
            }
        }
    }

    /** What the merged files show: sections that began before an earlier one had ended, and changes of holder. */
    record Merged(long sections, long overlaps, long switches) {}

    /** All sections on one lock. */
    static Merged merge(List<Path> files) throws IOException {
        return merge(files, worker -> 0);
    }

    /**
     * Sections on several locks: {@code lockOf} maps a worker to the lock it takes; overlaps and
     * changes of holder are counted per lock and summed.
     */
    static Merged merge(List<Path> files, LongUnaryOperator lockOf) throws IOException {
        List<long[]> all = new ArrayList<>();
        for (Path file : files) {
            try (DataInputStream in = new DataInputStream(new BufferedInputStream(Files.newInputStream(file)))) {
                while (true) {
                    long worker;
                    try {
                        worker = in.readLong();
                    } catch (EOFException e) {
                        break;
                    }
                    all.add(new long[] {worker, in.readLong(), in.readLong()});
                }
            }
        }
        all.sort(Comparator.comparingLong(e -> e[1]));
        long overlaps = 0;
        long switches = 0;
        // Per lock: {latest end so far, previous holder}.
        Map<Long, long[]> locks = new HashMap<>();
        for (long[] e : all) {
            long[] lock = locks.computeIfAbsent(lockOf.applyAsLong(e[0]), l -> new long[] {Long.MIN_VALUE, -1});
            if (e[1] < lock[0]) {
                overlaps++;
            }
            lock[0] = Math.max(lock[0], e[2]);
            if (e[0] != lock[1]) {
                switches++;
            }
            lock[1] = e[0];
        }
        return new Merged(all.size(), overlaps, switches);
    }
}
