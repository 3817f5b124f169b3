package io.reactivelock.internal;

import io.reactivelock.LockListener;
import java.time.Duration;

/** The call-time check of a semaphore's capacity and permit count, documented on {@link io.reactivelock.ReactiveSemaphore}. */
public final class PermitArguments {

    private PermitArguments() {}

    /** Checks {@code capacity >= 1} and {@code 1 <= n <= capacity}; a failure is told to {@code listener}, then thrown. */
    public static void check(String name, int capacity, int n, LockListener listener) {
        String problem = capacity < 1 ? "capacity must be at least 1, got " + capacity
                : n < 1 || n > capacity ? "n must be from 1 to the capacity (" + capacity + "), got " + n
                : null;
        if (problem != null) {
            IllegalArgumentException e = new IllegalArgumentException(problem);
            listener.acquireFailed(String.valueOf(name), e, Duration.ZERO);
            throw e;
        }
    }
}
