package io.reactivelock;

import java.time.Duration;
import java.util.function.Function;
import reactor.core.publisher.Mono;

/**
 * A distributed read-write lock for reactive code: on one name, many readers at once or one
 * writer. Runs a body while holding the read or the write lock, and releases it whatever the body
 * does.
 *
 * <h2>Contract of {@code withReadLock} and {@code withWriteLock}</h2>
 * The contract of {@link ReactiveLock#withLock} (lazy and cold, acquire with backoff until the
 * acquire timeout, release on value, empty, error and cancellation, renewal while the body runs,
 * {@link LockLostException} when the lease is lost, the maximum lease time, the listener events,
 * the bound on pending acquisitions, the argument checks), and:
 * <ul>
 *   <li><b>Readers and writers.</b> A reader is admitted while no writer holds the lock; a writer
 *       while nobody holds it. Each reader has its own lease, renewed while its body runs and
 *       ended on its own: a reader that dies keeps writers out for at most its TTL.
 *   <li><b>Writer preference.</b> A writer that waits keeps new readers out, so a stream of
 *       readers cannot starve it: it gets the lock once the readers inside leave. Readers can
 *       wait behind a stream of writers. A writer that stops calling (it died) stops keeping
 *       readers out after one {@linkplain LockOptions#waiterLease() waiter lease}.
 *   <li><b>Fencing.</b> A writer's lease carries a fencing token above every earlier writer's of
 *       the name; a reader's carries none ({@link LockLease#hasFencingToken()} is false).
 *   <li><b>Not reentrant, no upgrade.</b> A read lock taken inside a write lock of the same name
 *       (or a write lock inside a read lock) waits for itself until its acquire timeout; so does a
 *       read lock taken inside another one while a writer waits.
 * </ul>
 */
public interface ReactiveReadWriteLock {

    /**
     * Runs {@code body} while holding the read lock {@code name}, shared with other readers.
     *
     * @param name the lock's name
     * @param ttl how long this reader's lease outlives a holder that stops renewing
     * @param body the work to do; subscribed only once the read lock is held
     * @return a cold {@code Mono} with the body's outcome
     */
    <T> Mono<T> withReadLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body);

    /**
     * Runs {@code body} while holding the write lock {@code name}, alone.
     *
     * @param name the lock's name
     * @param ttl how long the lock outlives a holder that stops renewing
     * @param body the work to do; subscribed only once the write lock is held
     * @return a cold {@code Mono} with the body's outcome
     */
    <T> Mono<T> withWriteLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body);

    /** {@link #withReadLock(String, Duration, Function)} for a body that needs no lease. */
    default <T> Mono<T> withReadLock(String name, Duration ttl, Mono<T> body) {
        java.util.Objects.requireNonNull(body, "body");
        return withReadLock(name, ttl, lease -> body);
    }

    /** {@link #withWriteLock(String, Duration, Function)} for a body that needs no lease. */
    default <T> Mono<T> withWriteLock(String name, Duration ttl, Mono<T> body) {
        java.util.Objects.requireNonNull(body, "body");
        return withWriteLock(name, ttl, lease -> body);
    }

    /**
     * This lock with another acquire timeout ({@link Duration#ZERO}: one try), sharing
     * everything else; cheap, as {@link ReactiveLock#withAcquireTimeout}.
     *
     * @throws IllegalArgumentException if {@code acquireTimeout} is negative
     */
    ReactiveReadWriteLock withAcquireTimeout(Duration acquireTimeout);
}
