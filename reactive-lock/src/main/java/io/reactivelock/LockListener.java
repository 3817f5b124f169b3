package io.reactivelock;

import java.time.Duration;

/**
 * Hears what happens to the locks of one {@link io.reactivelock.redis.ReactiveRedisLock},
 * {@link io.reactivelock.redis.ReactiveRedlock} or {@code io.reactivelock.testing.InMemoryReactiveLock}
 * (reactive-lock-test),
 * for metrics and logs: set it with {@link LockOptions.Builder#listener(LockListener)}. Every method
 * does nothing by default.
 *
 * <p>Methods are called on whichever thread the event happens (a Lettuce event loop, the lock's
 * scheduler, the caller's thread for bad arguments), so they must be quick, must not block and
 * should not throw: an exception they throw is logged and otherwise ignored.
 *
 * <p>For each acquisition exactly one of {@link #acquired} and {@link #acquireFailed} is called,
 * unless it is cancelled first; each {@code acquired} is followed by one {@link #released}, which
 * comes after {@link #lost} when the lease was lost, and may be followed by one {@link #handedOff}.
 */
public interface LockListener {

    /** A listener that ignores everything: the default. */
    LockListener NONE = new LockListener() {};

    /**
     * The listener that hears the acquisitions of one kind of primitive: each semaphore, read-write
     * lock, multi-lock and lock asks its listener for it once, when it is created. A listener that
     * tells them apart (as {@code LockMetrics} tags its meters) returns a view; by default, itself.
     */
    default LockListener forPrimitive(Primitive primitive) {
        return this;
    }

    /** The lock is held and the body is about to run, {@code waited} after the subscription. */
    default void acquired(String name, Duration waited) {}

    /**
     * An acquisition failed: {@code error} is a {@link LockAcquisitionException} (busy for the whole
     * acquire timeout when it has no cause, a Redis failure otherwise), an
     * {@link IllegalArgumentException} or {@link NullPointerException} for arguments that
     * {@code withLock} rejected (then {@code name} is the rejected name, possibly {@code "null"}
     * or of any length), or an {@link IllegalStateException} after the lock was closed.
     */
    default void acquireFailed(String name, Throwable error, Duration waited) {}

    /** The lease was renewed. */
    default void renewed(String name) {}

    /**
     * The holder lost the lock before its body finished: a {@link LockLostException} or a
     * {@link LeaseTimeExceededException}. The body is being cancelled.
     */
    default void lost(String name, LockException error) {}

    /**
     * The holder let go, {@code held} after it acquired: the body finished, failed or was
     * cancelled, or the lease was lost. The release command may still be in flight.
     */
    default void released(String name, Duration held) {}

    /**
     * The holder's release handed the lock straight to a waiting acquisition, with no moment
     * where the lock was free: to a waiter in this process, or in Redis to the waiter in any
     * process that is next (the oldest sleeper; in fair mode the first in line). Called after
     * {@link #released}; the new holder's {@link #acquired} may come before or after it. A
     * release that frees the lock and lets waiters race is not a hand-off.
     */
    default void handedOff(String name) {}
}
