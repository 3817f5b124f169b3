package io.reactivelock.inspect;

import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * What Redis says about one lock, from {@link LockInspector#inspect}. The values come from a few
 * commands sent together, not from one atomic read: a lock that changes hands meanwhile may show
 * parts of both holders.
 *
 * @param name the lock name
 * @param holder the first 8 characters of the holder's token, or {@code null} when the lock is free.
 *     The whole token is the holder's secret (it releases and renews the lock) and is never shown.
 * @param ttl what is left of the holder's lease ({@code PTTL}), or {@code null} when free or when the
 *     key has no expiry (written by something other than this library)
 * @param fencingToken the last fencing token issued for this name (the holder's, while held), or
 *     {@code null} when its record has expired (60 s after the lease it was issued with)
 * @param waiting how many wait: the length of the fair line, or for a lock in non-fair mode the
 *     waiters of every process registered to be woken by the next release (those between attempts;
 *     one that is trying right now, or that never found the lock busy, is not counted)
 * @param waiters the first {@value LockInspector#MAX_WAITERS_LISTED} waiters of the fair line, first
 *     in line first
 */
public record LockState(String name, @Nullable String holder, @Nullable Duration ttl, @Nullable Long fencingToken,
        long waiting, List<Waiter> waiters) {

    public LockState {
        waiters = List.copyOf(waiters);
    }

    /** Whether someone holds the lock. */
    public boolean held() {
        return holder != null;
    }

    /**
     * One waiter in the fair line of a lock.
     *
     * @param token the first 8 characters of the waiter's token
     * @param leaseLeft how long the waiter keeps its place without calling Redis again; zero once it
     *     missed its lease (crashed, disconnected), after which it is dropped when the line next moves
     */
    public record Waiter(String token, Duration leaseLeft) {}
}
