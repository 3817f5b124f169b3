package io.reactivelock.spi;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Exponential backoff with jitter, as {@code Retry.backoff} computes it: step n is
 * {@code min * 2^n} capped at {@code max}, moved by up to {@code ±jitter} of itself, and kept
 * within [min, max]. Separate from {@code Retry.backoff} because a waiter sleeps for a step
 * <em>or until a release is announced</em>, whichever comes first.
 */
public record Backoff(Duration min, Duration max, double jitter) {

    /** The sleep before retry number {@code retry} (0 for the first retry). */
    public Duration step(long retry) {
        long minNanos = min.toNanos();
        long maxNanos = max.toNanos();
        long base = retry >= 62 || minNanos > (maxNanos >> Math.min(retry, 62)) ? maxNanos : minNanos << retry;
        long spread = (long) (base * jitter);
        long jittered = spread == 0 ? base : base - spread + ThreadLocalRandom.current().nextLong(2 * spread + 1);
        return Duration.ofNanos(Math.max(minNanos, Math.min(maxNanos, jittered)));
    }
}
