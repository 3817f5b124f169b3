package io.reactivelock;

import reactor.core.publisher.Mono;

/**
 * The client of one lock store (a Redis deployment, or the in-memory store of tests): the
 * {@link ReactiveLock} of that store, and the source of every other primitive on it. One per
 * application and store; the primitives it hands out are cheap views that share its connections,
 * and they know each other: a lock, a fair lock and a multi-lock on one name exclude each other.
 *
 * <p>Inject this type where code needs more than the lock (a semaphore, a read-write lock), so that
 * a test can hand it the in-memory client of {@code reactive-lock-test} instead of Redis.
 */
public interface ReactiveLockClient extends ReactiveLock {

    /**
     * The fair lock: waiters of a name, in every process, get it in the order they arrived. Same
     * names as this lock, so the two exclude each other; use one mode per name.
     */
    ReactiveLock fair();

    /**
     * A semaphore of {@code capacity} permits per name.
     *
     * @throws IllegalArgumentException if {@code capacity} is below 1
     */
    ReactiveSemaphore semaphore(int capacity);

    /** The read-write lock: on one name, many readers at once or one writer. */
    ReactiveReadWriteLock readWriteLock();

    /** The multi-lock: several names of this lock, all or none. */
    ReactiveMultiLock multiLock();

    /** Leader election on this lock. */
    default LeaderElection leaderElection() {
        return LeaderElection.of(this);
    }

    /**
     * Closes what this client owns, without blocking. Acquisitions requested afterwards, of any
     * primitive, fail with {@link LockClosedException}, and so do those still waiting; bodies
     * running are cancelled, their subscribers getting a {@link LockLostException}, and what they
     * hold is released (a store's connections close only after those releases, or after
     * {@link LockOptions#closeTimeout()}).
     */
    Mono<Void> closeAsync();
}
