package io.reactivelock;

/**
 * The acquisition was refused because the lock instance was closed ({@code closeAsync()}).
 * Nothing was sent to Redis; {@link #reason()} is {@link Reason#CLOSED}.
 */
public final class LockClosedException extends LockAcquisitionException {

    private static final long serialVersionUID = 1L;

    /** For implementations of {@link ReactiveLock}. */
    public LockClosedException(String lockName) {
        super(lockName, Reason.CLOSED, "Could not acquire lock '" + lockName + "': the lock instance was closed");
    }
}
