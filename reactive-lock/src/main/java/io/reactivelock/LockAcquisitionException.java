package io.reactivelock;

import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * The lock could not be acquired: it stayed busy for the whole acquire timeout, or Redis failed
 * (the Redis error is the {@linkplain #getCause() cause}), or too many acquisitions were already
 * waiting ({@link TooManyPendingAcquisitionsException}). The body never ran, and nothing of
 * this acquisition is left locked.
 */
public sealed class LockAcquisitionException extends LockException permits TooManyPendingAcquisitionsException {

    private static final long serialVersionUID = 1L;

    private final int attempts;
    private final Duration waited;

    /** For implementations of {@link ReactiveLock}; users receive it, they do not create it. */
    public LockAcquisitionException(String lockName, int attempts, Duration waited, @Nullable Throwable cause) {
        super(lockName, message(lockName, attempts, waited, cause), cause);
        this.attempts = attempts;
        this.waited = waited;
    }

    LockAcquisitionException(String lockName, String message) {
        super(lockName, message, null);
        this.attempts = 0;
        this.waited = Duration.ZERO;
    }

    /**
     * For implementations of {@link ReactiveLock} that explain the failure themselves:
     * {@code reason} completes "Could not acquire lock 'name' after n attempt(s) in m ms because ".
     */
    public LockAcquisitionException(String lockName, int attempts, Duration waited, String reason,
            @Nullable Throwable cause) {
        super(lockName, "Could not acquire lock '" + lockName + "' after " + attempts + " attempt(s) in "
                + waited.toMillis() + " ms because " + reason, cause);
        this.attempts = attempts;
        this.waited = waited;
    }

    private static String message(String lockName, int attempts, Duration waited, @Nullable Throwable cause) {
        String why = cause == null ? "it stayed busy" : "of " + cause;
        return "Could not acquire lock '" + lockName + "' after " + attempts + " attempt(s) in "
                + waited.toMillis() + " ms because " + why;
    }

    /** How many acquire commands were sent. */
    public int attempts() {
        return attempts;
    }

    /** How long the acquisition waited before giving up. */
    public Duration waited() {
        return waited;
    }
}
