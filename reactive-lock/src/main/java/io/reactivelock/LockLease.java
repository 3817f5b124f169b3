package io.reactivelock;

import io.reactivelock.internal.Leases;
import java.time.Duration;

/**
 * What the holder of a lock sees while its body runs: which lock, the proof of ownership, the
 * fencing token and how long the lease is known to be valid.
 *
 * <p>Pass {@link #fencingToken()} along with every write to the resource the lock protects and
 * let the resource reject writes whose token is not above the last one it accepted: that keeps
 * the resource safe even when a holder pauses past its lease (a GC pause, a slow network).
 */
public final class LockLease {

    /** The {@code fencingToken} argument of a lease whose lock issues no fencing token. */
    public static final long NO_FENCING_TOKEN = 0;

    private final String name;
    private final String token;
    private final long fencingToken;
    private volatile long validUntilNanos;

    static {
        // Lock implementations outside this package (the in-memory test double) create and renew leases through it.
        Leases.install(new Leases.Access() {
            @Override
            public LockLease create(String name, String token, long fencingToken, long validUntilNanos) {
                return new LockLease(name, token, fencingToken, validUntilNanos);
            }

            @Override
            public void extendTo(LockLease lease, long validUntilNanos) {
                lease.extendTo(validUntilNanos);
            }
        });
    }

    /** A {@code fencingToken} of {@value #NO_FENCING_TOKEN} means the lock issues none. */
    LockLease(String name, String token, long fencingToken, long validUntilNanos) {
        this.name = name;
        this.token = token;
        this.fencingToken = fencingToken;
        this.validUntilNanos = validUntilNanos;
    }

    /** The lock name given to {@code withLock}. */
    public String name() {
        return name;
    }

    /**
     * The unguessable token (128 random bits, hex) that proves ownership in Redis. Unique per
     * acquisition; release and renewal only act when the stored value equals it.
     */
    public String token() {
        return token;
    }

    /**
     * A number that is strictly greater than the one of every earlier holder of this lock name.
     * See the README's "Fencing tokens" section for how it is kept and when it holds.
     *
     * @throws UnsupportedOperationException if the lock issues no fencing token
     *     ({@link io.reactivelock.redlock.RedlockLock}): a number that only looks like one would
     *     let a resource accept a stale holder's writes
     */
    public long fencingToken() {
        if (fencingToken == NO_FENCING_TOKEN) {
            throw new UnsupportedOperationException("lock '" + name + "' issues no fencing token; see the README's Redlock section");
        }
        return fencingToken;
    }

    /**
     * The {@link System#nanoTime()} instant until which the lease is valid, measured from when
     * the last successful acquire or renew command was sent; extended by each renewal.
     */
    public long validUntilNanos() {
        return validUntilNanos;
    }

    /** Time left on the lease as of now, never negative. */
    public Duration remaining() {
        return Duration.ofNanos(Math.max(0, validUntilNanos - System.nanoTime()));
    }

    void extendTo(long validUntilNanos) {
        this.validUntilNanos = validUntilNanos;
    }

    @Override
    public String toString() {
        return "LockLease{name='" + name + "', fencingToken="
                + (fencingToken == NO_FENCING_TOKEN ? "none" : Long.toString(fencingToken)) + ", remaining=" + remaining() + "}";
    }
}
