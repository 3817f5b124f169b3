package io.reactivelock;

import java.time.Duration;
import java.util.function.Function;
import reactor.core.publisher.Mono;

/**
 * A distributed counting semaphore whose permits are leases: each name has {@link #capacity()}
 * permits, and {@code withPermits} runs a body while holding some of them, giving them back
 * whatever the body does. Get one from a client, with the capacity:
 * {@code ReactiveSemaphore exports = redis.semaphore(4)}.
 *
 * <h2>Contract of {@code withPermits}</h2>
 * The contract of {@link ReactiveLock#withLock} (lazy and cold, acquire with backoff until the
 * acquire timeout, release on value, empty, error and cancellation, renewal while the body runs,
 * {@link LockLostException} when the permits are lost, the maximum lease time, the listener
 * events, the bound on pending acquisitions), with "the lock" read as "the caller's permits":
 * <ul>
 *   <li><b>Admission.</b> An acquisition is admitted when the permits held by live holders of the
 *       name plus {@code permits} do not exceed the capacity. A holder whose lease ran out (it died,
 *       or stopped renewing) no longer counts.
 *   <li><b>Capacity given at use.</b> It is not stored: each acquisition checks the live holders
 *       against the capacity of the semaphore it was made on. Semaphores that disagree each get
 *       their own bound: with 2 permits held, a caller of {@code semaphore(2)} waits while one of
 *       {@code semaphore(5)} may take 3.
 *   <li><b>Not fair.</b> A waiter for many permits can be overtaken by callers asking for fewer.
 *   <li><b>No fencing token.</b> Holders are not exclusive, so the lease's
 *       {@link LockLease#hasFencingToken()} is false.
 * </ul>
 *
 * <h2>Arguments</h2>
 * Checked when {@code withPermits} is called, as for {@code withLock}, and {@code permits} from 1
 * to the capacity ({@link IllegalArgumentException}).
 */
public interface ReactiveSemaphore {

    /** How many permits each name of this semaphore has. */
    int capacity();

    /**
     * Runs {@code body} while holding {@code permits} of the {@link #capacity()} permits of
     * {@code name}; see the {@linkplain ReactiveSemaphore contract}.
     *
     * @param name the semaphore's name
     * @param permits how many permits this call holds, from 1 to the capacity
     * @param ttl how long the permits outlive a holder that stops renewing (crashes, hangs)
     * @param body the work to do with the permits; subscribed only once they are held
     * @return a cold {@code Mono} with the body's outcome
     */
    <T> Mono<T> withPermits(String name, int permits, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body);

    /** {@link #withPermits(String, int, Duration, Function)} for a body that needs no lease. */
    default <T> Mono<T> withPermits(String name, int permits, Duration ttl, Mono<T> body) {
        java.util.Objects.requireNonNull(body, "body");
        return withPermits(name, permits, ttl, lease -> body);
    }

    /** {@link #withPermits(String, int, Duration, Mono)} with one permit. */
    default <T> Mono<T> withPermit(String name, Duration ttl, Mono<T> body) {
        return withPermits(name, 1, ttl, body);
    }

    /**
     * This semaphore with another acquire timeout ({@link Duration#ZERO}: one try), sharing
     * everything else; cheap, as {@link ReactiveLock#withAcquireTimeout}.
     *
     * @throws IllegalArgumentException if {@code acquireTimeout} is negative
     */
    ReactiveSemaphore withAcquireTimeout(Duration acquireTimeout);
}
