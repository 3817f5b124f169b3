package io.reactivelock.inspect;

import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * What Redis says about one name, from {@link LockInspector#inspect}: its lock
 * ({@code ReactiveRedisLock}) and, when the name is also in use as one, its semaphore
 * ({@code semaphore(capacity)} of a client, {@link #semaphore}) and its read-write lock
 * ({@code readWriteLock()}, {@link #readWrite}). The three are different locks that
 * share a name, each with its own keys. The values come from a few commands sent together, not
 * from one atomic read: a lock that changes hands meanwhile may show parts of both holders.
 *
 * @param name the name
 * @param holder the first 8 characters of the lock holder's token, or {@code null} when the lock is free.
 *     The whole token is the holder's secret (it releases and renews the lock) and is never shown.
 * @param ttl what is left of the holder's lease ({@code PTTL}), or {@code null} when free or when the
 *     key has no expiry (written by something other than this library)
 * @param fencingToken the last fencing token issued for this lock (the holder's, while one whose body sees
 *     the lease holds it; a body that does not gets none), or
 *     {@code null} when its record has expired (60 s after the lease it was issued with)
 * @param waiting how many wait for the lock: the length of the fair line, or for a lock in non-fair
 *     mode the waiters of every process registered to be woken by the next release (those between
 *     attempts; one that is trying right now, or that never found the lock busy, is not counted)
 * @param waiters the first {@value LockInspector#MAX_WAITERS_LISTED} waiters of the fair line, first
 *     in line first
 * @param semaphore the name's semaphore while someone holds permits of it, else {@code null}
 * @param readWrite the name's read-write lock while a writer or readers hold it or a writer waits for
 *     it, else {@code null}
 */
public record LockState(String name, @Nullable String holder, @Nullable Duration ttl, @Nullable Long fencingToken,
        long waiting, List<Waiter> waiters, @Nullable Semaphore semaphore, @Nullable ReadWrite readWrite) {

    public LockState {
        waiters = List.copyOf(waiters);
    }

    /** Whether someone holds the lock (the semaphore and the read-write lock aside). */
    public boolean held() {
        return holder != null;
    }

    /**
     * Whether anything of this name is held: the lock, permits of its semaphore, or its read-write
     * lock (by a writer or a reader). These are the names {@link LockInspector#page} lists.
     */
    public boolean inUse() {
        return held() || semaphore != null || (readWrite != null && readWrite.held());
    }

    /**
     * One waiter in the fair line of a lock.
     *
     * @param token the first 8 characters of the waiter's token
     * @param leaseLeft how long the waiter keeps its place without calling Redis again; zero once it
     *     missed its lease (crashed, disconnected), after which it is dropped when the line next moves
     */
    public record Waiter(String token, Duration leaseLeft) {}

    /**
     * The semaphore of a name while someone holds permits of it. Only live holders count: one whose
     * lease ended (it crashed, or stopped renewing) is left out, though Redis drops it only at the
     * semaphore's next call. The capacity is not shown: it is given at each call, not stored.
     * Waiters are not shown either: they poll, and Redis does not know them.
     *
     * @param permits the permits the live holders hold together
     * @param holders the live holders, the one whose lease ends first first
     */
    public record Semaphore(long permits, List<PermitHolder> holders) {

        public Semaphore {
            holders = List.copyOf(holders);
        }
    }

    /**
     * A live holder of semaphore permits.
     *
     * @param token the first 8 characters of the holder's token
     * @param permits how many permits it holds
     * @param leaseLeft what is left of its lease
     */
    public record PermitHolder(String token, int permits, Duration leaseLeft) {}

    /**
     * The read-write lock of a name while a writer or readers hold it or a writer waits for it. Only
     * live readers and waiting writers count, as for a {@link Semaphore}'s holders.
     *
     * @param writer the first 8 characters of the writer's token, or {@code null} while no writer holds it
     * @param writerTtl what is left of the writer's lease, or {@code null} while no writer holds it
     * @param fencingToken the last fencing token issued to a writer of this name (the writer's, while
     *     one holds it), or {@code null} once its record expired
     * @param readers how many readers hold it
     * @param writersWaiting how many writers wait for it; while one does, new readers are kept out
     */
    public record ReadWrite(@Nullable String writer, @Nullable Duration writerTtl, @Nullable Long fencingToken,
            long readers, long writersWaiting) {

        /** Whether a writer or readers hold it. */
        public boolean held() {
            return writer != null || readers > 0;
        }
    }
}
