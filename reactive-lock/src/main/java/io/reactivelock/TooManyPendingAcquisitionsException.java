package io.reactivelock;

/**
 * The acquisition was refused before it started: the lock instance already had
 * {@link LockOptions#maxPendingAcquisitions()} acquisitions in progress. Nothing was sent to
 * Redis; {@link #attempts()} is 0 and {@link #reason()} is {@link Reason#TOO_MANY_PENDING}. Retrying later, or shedding the load, is the caller's choice.
 */
public final class TooManyPendingAcquisitionsException extends LockAcquisitionException {

    private static final long serialVersionUID = 1L;

    private final int maxPendingAcquisitions;

    /** For implementations of {@link ReactiveLock}. */
    public TooManyPendingAcquisitionsException(String lockName, int maxPendingAcquisitions) {
        super(lockName, Reason.TOO_MANY_PENDING, "Could not acquire lock '" + lockName + "': " + maxPendingAcquisitions
                + " acquisitions are already in progress on this lock instance (maxPendingAcquisitions)");
        this.maxPendingAcquisitions = maxPendingAcquisitions;
    }

    /** The bound that was reached. */
    public int maxPendingAcquisitions() {
        return maxPendingAcquisitions;
    }
}
