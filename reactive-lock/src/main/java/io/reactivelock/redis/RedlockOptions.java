package io.reactivelock.redis;

import java.time.Duration;
import java.util.Objects;

/**
 * The settings that only Redlock has; everything else comes from {@link io.reactivelock.LockOptions}.
 *
 * @param nodeTimeout how long one node may take to answer one command before it counts as failed
 *     for that round: small compared to the TTL, so that a dead or frozen node costs little
 * @param clockDriftFactor the share of the TTL set aside for clocks that run at different rates;
 *     the drift of a lease is {@code ttl x clockDriftFactor + 2 ms}
 */
public record RedlockOptions(Duration nodeTimeout, double clockDriftFactor) {

    /** Default {@link #nodeTimeout()}: 50 ms, the upper end of what the Redlock description suggests. */
    public static final Duration DEFAULT_NODE_TIMEOUT = Duration.ofMillis(50);
    /** Default {@link #clockDriftFactor()}: 1 % of the TTL. */
    public static final double DEFAULT_CLOCK_DRIFT_FACTOR = 0.01;

    private static final RedlockOptions DEFAULTS = new RedlockOptions(DEFAULT_NODE_TIMEOUT, DEFAULT_CLOCK_DRIFT_FACTOR);
    private static final long FIXED_DRIFT_NANOS = Duration.ofMillis(2).toNanos();

    /** Checks that {@code nodeTimeout} is positive and {@code clockDriftFactor} in [0, 0.5). */
    public RedlockOptions {
        Objects.requireNonNull(nodeTimeout, "nodeTimeout");
        if (nodeTimeout.isNegative() || nodeTimeout.isZero()) {
            throw new IllegalArgumentException("nodeTimeout must be positive, got " + nodeTimeout);
        }
        if (!(clockDriftFactor >= 0 && clockDriftFactor < 0.5)) {
            throw new IllegalArgumentException("clockDriftFactor must be in [0, 0.5), got " + clockDriftFactor);
        }
    }

    /** A node timeout of 50 ms and a clock drift factor of 0.01. */
    public static RedlockOptions defaults() {
        return DEFAULTS;
    }

    /** The time set aside for clock drift on a lease of {@code ttl}, in nanoseconds. */
    long driftNanos(Duration ttl) {
        return (long) (ttl.toNanos() * clockDriftFactor) + FIXED_DRIFT_NANOS;
    }
}
