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
 * <p>The engine asks, the store answers: every method is called for one acquisition, through the
 * per-call state {@code C} that {@link #open} made from the acquisition's {@link Request}, and
 * answers with a reply, a completion or a pause. A store that wakes waiters early keeps the
 * request's {@link Waiter}. None of the methods may block.
 *
 * @param <C> the store's state of one acquisition
 */
public interface LockStore<C> {

    /**
     * The state of a new acquisition, made when {@code withLock} is subscribed (unless the call
     * gave {@link LockCore#withLock(String, java.time.Duration, java.time.Duration, java.util.function.Function,
     * java.util.function.Function) its own opener}: a semaphore's permits, a read-write lock's mode).
     */
    C open(Request request);

    /**
     * A new ownership token for one acquisition. A store whose releases address their notices
     * to the waiter's client appends that client's address ({@link Tokens#next(String)}).
     */
    default String newToken() {
        return Tokens.next();
    }

    /**
     * Sends attempt number {@code attempt} (1 for the first) of the acquisition. Completes with the
     * {@link Reply} (granted, or refused and why), or fails with the error of the store, which the
     * core retries when {@link #isTransient}. The core keeps the returned stage even after its
     * caller left, to release a late grant.
     */
    CompletionStage<Reply> acquire(C call, int attempt);

    /**
     * One renewal of the held {@code lease}: completes empty once the lease is extended (the store
     * calls {@link Lease#extendTo}), fails with {@link LockLostException} when the lock is gone,
     * or with another error, which the core retries while the lease is valid if {@link #isTransient}.
     */
    Mono<Void> renew(C call, Lease lease);

    /**
     * The holder's release, awaited by {@code withLock} before it signals the body's outcome:
     * completes with {@code true} when it handed the lock straight to a waiter (the listener hears
     * a hand-off), {@code false} (or empty) otherwise. A failure makes the core retry
     * {@link #releaseAbandoned} in the background.
     */
    Mono<Boolean> release(C call);

    /**
     * One release of whatever the acquisition may hold or have been handed, and of its place in a
     * line; idempotent. Used after a cancelled or failed acquisition, a reply that came after it
     * ended, a lost lease and a failed release; the core retries it while it fails with a transient
     * error, until the lease's TTL.
     */
    CompletionStage<?> releaseAbandoned(C call);

    /** Whether an error of this store may pass on its own, so that the operation is worth retrying. */
    boolean isTransient(Throwable error);

    /**
     * How long to wait before the next attempt, given the {@code attempts} sent so far: 0 before
     * the first (zero then tries at once), else after the last one was refused or failed with a
     * transient error; {@code null} waits until {@linkplain Waiter#wake() woken} (or the acquire
     * timeout). The store may register the acquisition here to be woken by a release.
     */
    @Nullable Duration pause(C call, int attempts);

    /**
     * How long the core waits for an acquire reply before it counts the attempt as failed:
     * {@code commandTimeout} by default; {@code null} for a store whose replies end by themselves.
     */
    default @Nullable Duration replyTimeout(Duration commandTimeout) {
        return commandTimeout;
    }

    /** The store's own check of a TTL, beside the common ones; throws {@link IllegalArgumentException}. */
    default void checkTtl(Duration ttl) {}

    /** The acquisition no longer waits: it holds the lock, or it ended. Unregisters what {@link #pause} registered. */
    default void stopWaiting(C call) {}

    /**
     * What the attempt of {@code call} still out at the acquire deadline is waiting for, as the
     * refusal the acquisition then ends with; {@code null} (the default) when the store cannot
     * say, and the acquisition ends with its last outcome.
     */
    default @Nullable Reply outstanding(C call) {
        return null;
    }

    /**
     * The outcome of one acquire attempt: granted with a fencing token, valid for {@code validForNanos}
     * from when the attempt was sent; or refused, with the reason, a detail for the message, the
     * error behind it, if any, and whether the acquisition ends {@code atOnce} with it.
     */
    record Reply(long fencingToken, long validForNanos, @Nullable Reason refusal, @Nullable String detail,
            @Nullable Throwable error, boolean atOnce) {

        /**
         * The lock is the caller's; {@link io.reactivelock.LockLease#NO_FENCING_TOKEN} for a lock
         * without fencing tokens, or an acquisition that needs none ({@link Request#fencing()}).
         */
        public static Reply granted(long fencingToken, long validForNanos) {
            return new Reply(fencingToken, validForNanos, null, null, null, false);
        }

        /** Another holder has the lock. */
        public static Reply busy() {
            return BUSY;
        }

        /** Refused for {@code reason}, explained by {@code detail} (completes "... because "). */
        public static Reply refused(Reason reason, String detail, @Nullable Throwable error) {
            return new Reply(0, 0, reason, detail, error, false);
        }

        /**
         * Refused for {@code reason} in a way that more attempts cannot mend: the acquisition ends
         * now with it, however much of its acquire timeout is left.
         */
        public static Reply refusedAtOnce(Reason reason, String detail, @Nullable Throwable error) {
            return new Reply(0, 0, reason, detail, error, true);
        }

        private static final Reply BUSY = new Reply(0, 0, Reason.BUSY, "it stayed busy", null, false);

        /** Whether the lock was granted. */
        public boolean isGranted() {
            return refusal == null;
        }
    }
}
