package io.reactivelock.bench;

import java.util.Locale;
import java.util.Map;

/** Reading the {@code SCALE key=value} lines of one {@link ScaleCell} run. */
final class ScaleResult {

    private static final int OUT_OF_MEMORY_EXIT = 3; // -XX:+ExitOnOutOfMemoryError

    private ScaleResult() {}

    static boolean ok(Map<String, String> r) {
        return "0".equals(r.get("exitCode")) && "true".equals(r.get("drained")) && "0".equals(r.get("errors"))
                && "0".equals(r.get("overlaps")) && r.get("waiters").equals(r.get("completed"));
    }

    static boolean outOfMemory(Map<String, String> r) {
        return Integer.toString(OUT_OF_MEMORY_EXIT).equals(r.get("exitCode")) && !r.containsKey("drained");
    }

    static String why(Map<String, String> r) {
        if (outOfMemory(r)) {
            String progress = r.get("progress");
            String at = r.containsKey("heapAllQueuedMb") ? "after all " + r.get("waiters") + " were queued"
                    : progress == null ? "while queueing the waiters"
                    : "after queueing about " + progress.split(" ")[0] + " waiters";
            return String.format(Locale.ROOT, "out of heap %s; about %,d bytes of heap per queued waiter", at, bytesPerWaiter(r));
        }
        if (!"0".equals(r.get("exitCode")) && !r.containsKey("drained")) {
            return "the scale JVM exited with code " + r.get("exitCode");
        }
        if (!"true".equals(r.get("drained"))) {
            return r.get("completed") + " of " + r.get("waiters") + " completed within the time limit";
        }
        return r.get("errors") + " errors, " + r.get("overlaps") + " overlaps";
    }

    /** Bytes of heap one queued waiter costs: measured after all were queued, else from the last progress line. */
    static long bytesPerWaiter(Map<String, String> r) {
        if (r.containsKey("bytesPerWaiter")) {
            return Long.parseLong(r.get("bytesPerWaiter"));
        }
        String progress = r.get("progress");
        if (progress == null || !r.containsKey("heapBaselineMb")) {
            return -1;
        }
        String[] parts = progress.split(" ");
        long queued = Long.parseLong(parts[0]);
        long live = Long.parseLong(parts[1]);
        return Math.max(0, live - (Long.parseLong(r.get("heapBaselineMb")) << 20)) / queued;
    }

    /** A number of waiters likely to complete where {@code r} did not: by heap if it ran out, else a quarter. */
    static int waitersThatFit(Map<String, String> r, int requested) {
        int fits;
        long perWaiter = bytesPerWaiter(r);
        if (outOfMemory(r) && perWaiter > 0 && r.containsKey("maxHeapMb")) {
            long free = (Long.parseLong(r.get("maxHeapMb")) - Long.parseLong(r.get("heapBaselineMb"))) << 20;
            fits = (int) Math.min(requested / 2, free * 6 / 10 / perWaiter);
        } else {
            fits = requested / 4;
        }
        int unit = fits >= 20_000 ? 5_000 : 1_000;
        return fits / unit * unit;
    }
}
