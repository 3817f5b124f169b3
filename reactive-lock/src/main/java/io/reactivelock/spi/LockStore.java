package io.reactivelock.spi;

import io.reactivelock.LockAcquisitionException.Reason;
import io.reactivelock.LockLostException;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * Where a lock lives and how its waiters wait: the part of a lock that {@link LockCore} does not
 * own. See {@link LockCore} for how a new store is written.
 *
 * <p>Every method is called for one acquisition, through the per-call state {@code C} that
 * {@link #open} made for it (keys, script arguments, a place in a line). None may block.
 *
 * @param <C> the store's state of one acquisition
 */
public interface LockStore<C> {

    /**
     * The state of a new acquisition, made when {@code withLock} is subscribed (unless the call
     * gave {@link LockCore#withLock(String, java.time.Duration, java.time.Duration, java.util.function.Function,
     * java.util.function.Function) its own opener}).
     */
    C open(LockCore<C>.Acquisition acquisition);

    /**
     * Sends one acquire attempt. Completes with the {@link Reply} (granted, or refused and why),
     * or fails with the error of the store, which the core retries when {@link #isTransient}.
     * The core keeps the returned stage even after its caller left, to release a late grant.
     */
    CompletionStage<Reply> acquire(C call);

    /**
     * One renewal of the held {@code lease}: completes empty once the lease is extended (the store
     * calls {@link Lease#extendTo}), fails with {@link LockLostException} when the lock is gone,
     * or with another error, which the core retries while the lease is valid if {@link #isTransient}.
     */
    Mono<Void> renew(C call, Lease lease);

    /**
     * The holder's release (or a hand-off to the next waiter), awaited by {@code withLock} before
     * it signals the body's outcome. A failure makes the core retry {@link #releaseAbandoned} in the
     * background.
     */
    Mono<Void> release(C call);

    /**
     * One release of whatever the acquisition may hold or have been handed, and of its place in a
     * line; idempotent. Used after a cancelled or failed acquisition, a lost lease and a failed
     * release; the core retries it while it fails with a transient error, until the lease's TTL.
     */
    CompletionStage<?> releaseAbandoned(C call);

    /** Whether an error of this store may pass on its own, so that the operation is worth retrying. */
    boolean isTransient(Throwable error);

    /**
     * How long to wait before the next attempt, after attempt number {@code retry} (0 for the
     * first) was refused or failed with a transient error; {@code null} waits until
     * {@linkplain LockCore.Acquisition#wake() woken} (or the acquire timeout). The store may
     * register the acquisition here to be woken by a release.
     */
    @Nullable Duration pause(C call, long retry);

    /**
     * How long the core waits for an acquire reply before it counts the attempt as failed:
     * {@code commandTimeout} by default; {@code null} for a store whose replies end by themselves.
     */
    default @Nullable Duration replyTimeout(Duration commandTimeout) {
        return commandTimeout;
    }

    /** The store's own check of a TTL, beside the common ones; throws {@link IllegalArgumentException}. */
    default void checkTtl(Duration ttl) {}

    /** A wait before the first attempt (to queue behind local waiters, say); zero tries at once. */
    default Duration pauseBeforeFirstAttempt(C call) {
        return Duration.ZERO;
    }

    /** The acquisition no longer waits: it holds the lock, or it ended. Unregisters what {@link #pause} registered. */
    default void stopWaiting(C call) {}

    /**
     * Whether listener durations are measured on the scheduler's clock (so that they follow virtual
     * time) rather than {@link System#nanoTime()}.
     */
    default boolean measuresOnSchedulerClock() {
        return false;
    }

    /**
     * The outcome of one acquire attempt: granted with a fencing token, valid for {@code validForNanos}
     * from when the attempt was sent; or refused, with the reason, a detail for the message and the
     * error behind it, if any.
     */
    record Reply(long fencingToken, long validForNanos, @Nullable Reason refusal, @Nullable String detail,
            @Nullable Throwable error) {

        /** The lock is the caller's; {@link io.reactivelock.LockLease#NO_FENCING_TOKEN} for a lock without fencing tokens. */
        public static Reply granted(long fencingToken, long validForNanos) {
            return new Reply(fencingToken, validForNanos, null, null, null);
        }

        /** Another holder has the lock. */
        public static Reply busy() {
            return BUSY;
        }

        /** Refused for {@code reason}, explained by {@code detail} (completes "... because "). */
        public static Reply refused(Reason reason, String detail, @Nullable Throwable error) {
            return new Reply(0, 0, reason, detail, error);
        }

        private static final Reply BUSY = new Reply(0, 0, Reason.BUSY, "it stayed busy", null);

        /** Whether the lock was granted. */
        public boolean isGranted() {
            return refusal == null;
        }
    }
}
