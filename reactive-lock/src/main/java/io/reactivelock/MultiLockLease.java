package io.reactivelock;

import java.time.Duration;
import java.util.List;

/**
 * What the holder of a {@link ReactiveMultiLock} sees while its body runs: the names it holds,
 * the proof of ownership, a fencing token per name and how long the lease is known to be valid.
 *
 * <p>Pass {@link #fencingToken(String) fencingToken(name)} along with every write to the resource
 * that {@code name} protects, as for {@link LockLease#fencingToken()}.
 */
public interface MultiLockLease {

    /** The names held, sorted, each once. */
    List<String> names();

    /** The unguessable token that proves ownership of every name; unique per acquisition. */
    String token();

    /**
     * A number greater than the one of every earlier holder of {@code name} (alone, or with other
     * names), kept as {@link LockLease#fencingToken()} is: see the README's "Fencing tokens".
     *
     * @throws IllegalArgumentException if {@code name} is not one of {@link #names()}
     */
    long fencingToken(String name);

    /**
     * The {@link System#nanoTime()} instant until which every name is held, measured from when the
     * last successful acquire or renew was sent; extended by each renewal.
     */
    long validUntilNanos();

    /** Time left on the lease as of now, never negative. */
    default Duration remaining() {
        return Duration.ofNanos(Math.max(0, validUntilNanos() - System.nanoTime()));
    }
}
