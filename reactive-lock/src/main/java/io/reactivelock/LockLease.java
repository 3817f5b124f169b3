package io.reactivelock;

import java.time.Duration;

/**
 * What the holder of a lock sees while its body runs: which lock, the proof of ownership, the
 * fencing token and how long the lease is known to be valid.
 *
 * <p>Pass {@link #fencingToken()} along with every write to the resource the lock protects and
 * let the resource reject writes whose token is not above the last one it accepted: that keeps
 * the resource safe even when a holder pauses past its lease (a GC pause, a slow network).
 *
 * <p>Leases are made by the locks of this library; code under test that takes a lease directly
 * can be given one by {@code io.reactivelock.testing.InMemoryReactiveLock.lease} (reactive-lock-test).
 */
public interface LockLease {

    /** What {@link #hasFencingToken()} is false for: the lock issues no fencing token. */
    long NO_FENCING_TOKEN = 0;

    /** The lock name given to {@code withLock}. */
    String name();

    /**
     * The unguessable token (128 random bits, hex, followed on the Redis lock by its client's
     * address) that proves ownership in Redis. Unique per acquisition; release and renewal only
     * act when the stored value equals it.
     */
    String token();

    /** Whether this lock issues fencing tokens ({@link io.reactivelock.redis.ReactiveRedlock} does not). */
    boolean hasFencingToken();

    /**
     * A number greater than the one of every earlier holder of this lock name while the name's
     * fencing record lives on the server that issued both. After a restart or failover that lost
     * a record ahead of the new server's clock it can go backwards: see the README's "Fencing
     * tokens" section for how it is kept and exactly when it holds.
     *
     * @throws UnsupportedOperationException if the lock issues no fencing token
     *     ({@link io.reactivelock.redis.ReactiveRedlock}): a number that only looks like one would
     *     let a resource accept a stale holder's writes
     */
    long fencingToken();

    /**
     * The {@link System#nanoTime()} instant until which the lease is valid, measured from when
     * the last successful acquire or renew command was sent; extended by each renewal.
     */
    long validUntilNanos();

    /** Time left on the lease as of now, never negative. */
    default Duration remaining() {
        return Duration.ofNanos(Math.max(0, validUntilNanos() - System.nanoTime()));
    }
}
