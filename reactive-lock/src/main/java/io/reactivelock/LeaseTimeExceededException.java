package io.reactivelock;

import java.time.Duration;

/**
 * The body held the lock for the whole {@linkplain LockOptions#maxLeaseTime() maximum lease time}:
 * it was cancelled and the lock released, so that a runaway holder cannot keep a lock forever.
 */
public final class LeaseTimeExceededException extends LockException {

    private static final long serialVersionUID = 1L;

    private final Duration maxLeaseTime;

    /** For implementations of {@link ReactiveLock}; users receive it, they do not create it. */
    public LeaseTimeExceededException(String lockName, Duration maxLeaseTime) {
        super(lockName, "Held lock '" + lockName + "' for the maximum lease time of " + maxLeaseTime.toMillis()
                + " ms; the body was cancelled and the lock released", null);
        this.maxLeaseTime = maxLeaseTime;
    }

    /** The limit that was reached. */
    public Duration maxLeaseTime() {
        return maxLeaseTime;
    }
}
