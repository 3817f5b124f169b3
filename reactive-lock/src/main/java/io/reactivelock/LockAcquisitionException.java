package io.reactivelock;

import java.time.Duration;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * The lock could not be acquired; {@link #reason()} says why. The body never ran, and nothing of
 * this acquisition is left locked.
 */
public sealed class LockAcquisitionException extends LockException
        permits TooManyPendingAcquisitionsException, LockClosedException {

    private static final long serialVersionUID = 1L;

    /** Why an acquisition failed: what listeners, metrics and observations report. */
    public enum Reason {
        /** Another holder kept the lock for the whole acquire timeout (or at the one try of a zero timeout). */
        BUSY,
        /** Redis could not be reached or did not answer in time, until the acquire timeout; the cause is the last error. */
        REDIS_UNAVAILABLE,
        /** Redis answered with an error that retrying cannot mend (permissions, authentication, wrong type): the cause. */
        REDIS_ERROR,
        /** Redlock: no majority of the nodes granted the lock, because too many failed or answered too late. */
        QUORUM_NOT_REACHED,
        /** The lock instance already had {@link LockOptions#maxPendingAcquisitions()} acquisitions in progress. */
        TOO_MANY_PENDING,
        /** The lock instance was closed. */
        CLOSED,
        /**
         * Replica-acknowledged grants ({@link LockOptions#replicaAcknowledgement()}): the lock was
         * granted, but the replicas did not acknowledge the grant in time until the acquire timeout,
         * or the master reports no connected replica left (or fewer than a number set; then at once).
         * The grant was released; the message names the replicas the master reported.
         */
        NOT_REPLICATED;

        /** The reason as a metric or observation tag value: {@code busy}, {@code redis-unavailable}, .... */
        public String tag() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }
    }

    private final Reason reason;
    private final int attempts;
    private final Duration waited;

    /**
     * For implementations of {@link ReactiveLock}; users receive it, they do not create it.
     * {@code detail} completes "Could not acquire lock 'name' after n attempt(s) in m ms because ".
     */
    public LockAcquisitionException(String lockName, Reason reason, int attempts, Duration waited, String detail,
            @Nullable Throwable cause) {
        super(lockName, "Could not acquire lock '" + lockName + "' after " + attempts + " attempt(s) in "
                + waited.toMillis() + " ms because " + detail, cause);
        this.reason = reason;
        this.attempts = attempts;
        this.waited = waited;
    }

    LockAcquisitionException(String lockName, Reason reason, String message) {
        super(lockName, message, null);
        this.reason = reason;
        this.attempts = 0;
        this.waited = Duration.ZERO;
    }

    /** Why the acquisition failed. */
    public Reason reason() {
        return reason;
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
