package io.reactivelock;

import java.time.Duration;
import java.util.function.Function;
import reactor.core.publisher.Mono;

/**
 * A distributed counting semaphore whose permits are leases: runs a body while holding
 * {@code n} of the {@code capacity} permits of a name, and gives them back whatever the body does.
 *
 * <h2>Contract of {@code withPermits}</h2>
 * The contract of {@link ReactiveLock#withLock} (lazy and cold, acquire with backoff until the
 * acquire timeout, release on value, empty, error and cancellation, renewal while the body runs,
 * {@link LockLostException} when the permits are lost, the maximum lease time, the listener
 * events, the bound on pending acquisitions), with "the lock" read as "the caller's permits":
 * <ul>
 *   <li><b>Admission.</b> An acquisition is admitted when the permits held by live holders of the
 *       name plus {@code n} do not exceed {@code capacity}. A holder whose lease ran out (it died,
 *       or stopped renewing) no longer counts.
 *   <li><b>Capacity given at use.</b> It is not stored: each acquisition checks the live holders
 *       against the capacity it was given. Callers that disagree each get their own bound: with 2
 *       permits held, a caller with capacity 2 waits while one with capacity 5 may take 3.
 *   <li><b>Not fair.</b> A waiter for many permits can be overtaken by callers asking for fewer.
 *   <li><b>No fencing token.</b> Holders are not exclusive, so the lease's
 *       {@link LockLease#hasFencingToken()} is false.
 * </ul>
 *
 * <h2>Arguments</h2>
 * Checked when {@code withPermits} is called, as for {@code withLock}, and: {@code capacity} at
 * least 1, {@code n} from 1 to {@code capacity} ({@link IllegalArgumentException}).
 */
public interface ReactiveSemaphore {

    /**
     * Runs {@code body} while holding {@code n} of the {@code capacity} permits of {@code name};
     * see the {@linkplain ReactiveSemaphore contract}.
     *
     * @param name the semaphore's name
     * @param capacity how many permits the name has, for this call
     * @param n how many permits this call holds
     * @param ttl how long the permits outlive a holder that stops renewing (crashes, hangs)
     * @param body the work to do with the permits; subscribed only once they are held
     * @return a cold {@code Mono} with the body's outcome
     */
    <T> Mono<T> withPermits(String name, int capacity, int n, Duration ttl,
            Function<? super LockLease, ? extends Mono<T>> body);

    /** {@link #withPermits(String, int, int, Duration, Function)} for a body that needs no lease. */
    default <T> Mono<T> withPermits(String name, int capacity, int n, Duration ttl, Mono<T> body) {
        java.util.Objects.requireNonNull(body, "body");
        return withPermits(name, capacity, n, ttl, lease -> body);
    }
}
