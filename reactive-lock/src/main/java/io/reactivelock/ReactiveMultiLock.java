package io.reactivelock;

import java.time.Duration;
import java.util.Collection;
import java.util.function.Function;
import reactor.core.publisher.Mono;

/**
 * Several named locks taken together, all or none: runs a body while holding every one of them,
 * and releases them all whatever the body does.
 *
 * <h2>Contract of {@code withLocks}</h2>
 * The contract of {@link ReactiveLock#withLock} (lazy and cold, acquire with backoff until the
 * acquire timeout, release on value, empty, error and cancellation, renewal while the body runs,
 * the maximum lease time, the listener events, the bound on pending acquisitions), with "the lock"
 * read as "every one of the names", and:
 * <ul>
 *   <li><b>All or none.</b> The body runs only once every name is held by this call. An attempt
 *       that finds one name held by anyone else takes none of them and waits; while it waits it
 *       holds nothing, so the other names stay free for other callers.
 *   <li><b>No deadlock.</b> The names are a set: their order in the collection does not matter,
 *       and callers listing the same names in different orders neither deadlock nor starve each
 *       other, because no caller ever waits while holding some of its names.
 *   <li><b>The same locks as {@code withLock}.</b> Each name is the lock of that name, so a
 *       {@code withLocks} and a {@code withLock} on one of its names exclude each other.
 *   <li><b>Fencing.</b> {@link MultiLockLease#fencingToken(String)} gives each name a fencing
 *       token above the one of every earlier holder of that name, whether it held the name alone
 *       or with others.
 *   <li><b>Lost lease.</b> When renewal finds any one of the names lost, the body is cancelled,
 *       the {@code Mono} fails with {@link LockLostException} naming that name, and the other
 *       names are released.
 *   <li><b>Listener events</b> are named by the sorted names, as {@code "[a, b]"} (cut short,
 *       with the count of names, beyond {@value ReactiveLock#MAX_NAME_LENGTH} characters).
 * </ul>
 *
 * <h2>Arguments</h2>
 * Checked when {@code withLocks} is called, before any subscription, as for {@code withLock},
 * and: {@code names} not {@code null} and without {@code null} elements
 * ({@link NullPointerException}); not empty, at most {@value #MAX_NAMES} names, no name twice, each
 * name valid as for {@code withLock} ({@link IllegalArgumentException}).
 */
public interface ReactiveMultiLock {

    /**
     * Most names one call may hold. An attempt takes its names in one script per Redis node,
     * which runs alone on that node, and on a Cluster one node after another: the bound keeps both
     * short. A multi-lock is meant for the few entities one operation touches (the accounts of a
     * transfer, the items of an order); more names usually want one coarser lock.
     */
    int MAX_NAMES = 64;

    /**
     * Runs {@code body} while holding every lock of {@code names}; see the
     * {@linkplain ReactiveMultiLock contract}.
     *
     * @param names the lock names, in any order, each at most once
     * @param ttl how long the locks outlive a holder that stops renewing (crashes, hangs)
     * @param body the work to do; subscribed only once every name is held
     * @return a cold {@code Mono} with the body's outcome
     */
    <T> Mono<T> withLocks(Collection<String> names, Duration ttl,
            Function<? super MultiLockLease, ? extends Mono<T>> body);

    /** {@link #withLocks(Collection, Duration, Function)} for a body that needs no lease. */
    default <T> Mono<T> withLocks(Collection<String> names, Duration ttl, Mono<T> body) {
        java.util.Objects.requireNonNull(body, "body");
        return withLocks(names, ttl, lease -> body);
    }

    /**
     * This lock with another acquire timeout ({@link Duration#ZERO}: one try), sharing
     * everything else; cheap, as {@link ReactiveLock#withAcquireTimeout}.
     *
     * @throws IllegalArgumentException if {@code acquireTimeout} is negative
     */
    ReactiveMultiLock withAcquireTimeout(Duration acquireTimeout);
}
