package io.reactivelock;

import java.time.Duration;
import java.util.function.Function;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A distributed lock for reactive code: runs a body while holding a named lock, and releases it
 * whatever the body does.
 *
 * <h2>Contract of {@code withLock}</h2>
 * <ul>
 *   <li><b>Lazy and cold.</b> Nothing happens until subscription; every subscription is a new,
 *       independent acquisition with its own token.
 *   <li><b>Acquire.</b> Attempts are retried with exponential backoff and jitter while the lock is
 *       busy or Redis is briefly unreachable, for at most the acquire timeout; then the
 *       {@code Mono} fails with {@link LockAcquisitionException} and the body is never subscribed.
 *       Permanent Redis errors (permissions, authentication, wrong type) fail at once.
 *   <li><b>Body.</b> Subscribed only once the lock is held. While it runs the lease is renewed
 *       periodically (a third of the TTL by default).
 *   <li><b>Body emits a value, completes empty, or fails.</b> The lock is released, then the
 *       {@code Mono} emits the same value, completes empty, or fails with the same error. A failed
 *       release never replaces the body's outcome: it is logged, and added as suppressed to the
 *       body's error when there is one. A release that cannot reach Redis is harmless: the lease
 *       expires after its TTL. A body that emits or completes after its lease ran out (frozen past
 *       it before the renewal noticed) does not pass its value on: the {@code Mono} fails with
 *       {@link LockLostException} after the release.
 *   <li><b>Cancelled.</b> At any moment (waiting, acquiring, running, releasing) cancellation
 *       stops the body and the renewal and releases the lock in the background; the cancel is not
 *       delayed by the release. An acquire reply that arrives after the cancellation is released
 *       too, so nothing stays locked until its TTL.
 *   <li><b>Lease lost.</b> If renewal finds the lock gone or taken by another holder, or cannot
 *       reach Redis before the lease runs out, the body is cancelled and the {@code Mono} fails
 *       with {@link LockLostException}. Renewal never re-acquires.
 *   <li><b>Held too long.</b> At the maximum lease time the body is cancelled, the lock released
 *       and the {@code Mono} fails with {@link LeaseTimeExceededException}.
 * </ul>
 *
 * <h2>Arguments</h2>
 * Checked when {@code withLock} is called, before any subscription:
 * <ul>
 *   <li>{@code name}: not {@code null} ({@link NullPointerException}), 1 to
 *       {@value #MAX_NAME_LENGTH} characters, no unpaired surrogate characters
 *       ({@link IllegalArgumentException}). Any other character is allowed and names its own lock.
 *   <li>{@code ttl}: not {@code null}; from {@value #MIN_TTL_MILLIS} ms up to the maximum lease
 *       time; above the renewal interval when one is configured.
 *   <li>{@code body}: not {@code null}; a body function that returns {@code null} fails the
 *       {@code Mono} with {@link NullPointerException} after the lock is released.
 * </ul>
 */
public interface ReactiveLock {

    /** Longest accepted lock name, in UTF-16 characters. */
    int MAX_NAME_LENGTH = 512;

    /** Shortest accepted lease TTL, in milliseconds. */
    long MIN_TTL_MILLIS = 100;

    /**
     * Runs {@code body} while holding the lock {@code name}; see the {@linkplain ReactiveLock
     * contract} for every signal.
     *
     * @param name the lock's name, usually an entity id such as {@code "order:42"}
     * @param ttl how long the lock outlives a holder that stops renewing (crashes, hangs)
     * @param body the work to do under the lock; subscribed only once the lock is held
     * @return a cold {@code Mono} with the body's outcome
     */
    default <T> Mono<T> withLock(String name, Duration ttl, Mono<T> body) {
        java.util.Objects.requireNonNull(body, "body");
        return withLock(name, ttl, lease -> body);
    }

    /**
     * Runs the body built from the held {@link LockLease}, for bodies that need the fencing token
     * or the remaining lease time; otherwise the same as {@link #withLock(String, Duration, Mono)}.
     */
    <T> Mono<T> withLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body);

    /**
     * Runs a body of many values while holding the lock {@code name}: a stream that must run under
     * the lock until it ends. Its values pass on as they come; the lock is released when the body
     * completes or fails (then the {@code Flux} completes or fails the same way) or when the
     * subscriber cancels; the lease is renewed meanwhile. Otherwise the {@linkplain ReactiveLock
     * contract} of {@code withLock}: a lost lease cancels the body and fails the {@code Flux} with
     * {@link LockLostException}, and so on.
     *
     * <pre>{@code
     * Flux<Row> rows = locks.withLockMany("export:" + id, Duration.ofSeconds(30), lease -> exporter.rows(id));
     * }</pre>
     */
    <T> Flux<T> withLockMany(String name, Duration ttl, Function<? super LockLease, ? extends Publisher<T>> body);

    /**
     * This lock with another acquire timeout: its {@code withLock} waits at most
     * {@code acquireTimeout} for a busy lock ({@link Duration#ZERO}: one try), and shares
     * everything else (connections, bounds, listener) with this one. Cheap: make one per call
     * site, or per call.
     *
     * <pre>{@code
     * locks.withAcquireTimeout(Duration.ofMillis(200))
     *         .withLock("sale:" + sku, ttl, lease -> sell(sku, lease.fencingToken()));
     * }</pre>
     *
     * @throws NullPointerException if {@code acquireTimeout} is null
     * @throws IllegalArgumentException if it is negative
     */
    ReactiveLock withAcquireTimeout(Duration acquireTimeout);
}
