package io.reactivelock.faults;

import io.reactivelock.support.RedisServer;
import java.time.Duration;

/** Small helpers shared by the fault tests; every method blocks, call them from the test thread. */
final class Faults {

    /**
     * How late after the end of its lease a holder may be told that it lost the lock: the timer that
     * ends the lease fires on a shared Reactor thread and the error reaches the caller through the
     * body's cancellation, on a 2-core machine shared with other builds.
     */
    static final Duration TOLD_LATE = Duration.ofMillis(300);

    private Faults() {}

    static boolean exists(RedisServer redis, String key) {
        return "1".equals(redis.call("EXISTS", key));
    }

    static long lockKeys(RedisServer redis) {
        return Long.parseLong(redis.call("EVAL", "return #redis.call('KEYS', 'lock:*')", "0"))
                - Long.parseLong(redis.call("EVAL", "return #redis.call('KEYS', 'lock:*:fence')", "0"));
    }

    static long millisSince(long nanoTime) {
        return Duration.ofNanos(System.nanoTime() - nanoTime).toMillis();
    }

    /** Prints a measured number for the fault report (surefire keeps it in the test's output file). */
    static void report(String scenario, String measurement) {
        System.out.println("[faults] " + scenario + ": " + measurement);
    }
}
