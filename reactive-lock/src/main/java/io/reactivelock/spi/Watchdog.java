package io.reactivelock.spi;

import io.reactivelock.LeaseTimeExceededException;
import io.reactivelock.LockException;
import io.reactivelock.LockLease;
import io.reactivelock.LockListener;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.util.retry.Retry;

/**
 * What runs beside a body while it holds a lock: a renewal every interval and the maximum lease
 * time. Shared by every lock implementation, so that they renew and give up alike.
 */
final class Watchdog {

    private Watchdog() {}

    /**
     * Never emits; renews with {@code renew} (given the interval) every renewal interval of
     * {@code ttl}, one renewal at a time, and fails with the renewal's {@link LockException} or,
     * at {@code options.maxLeaseTime()}, with {@link LeaseTimeExceededException}; either failure
     * is told to {@code listener} as a lost lease. One timer is armed at a time: the next renewal,
     * or the lease cap when it comes first. Both count from when the lease began, {@code spentNanos}
     * before the watch starts: a grant that arrived late (most of its lease spent on the way) is
     * renewed at once rather than one interval after the body entered, so that a lease that cannot
     * be renewed is still found lost when it runs out.
     */
    public static <T> Mono<T> watch(String name, Duration ttl, long spentNanos, LockOptions options, Scheduler scheduler,
            LockListener listener, Function<Duration, Mono<Void>> renew) {
        long every = options.renewalIntervalFor(ttl).toNanos();
        long cap = options.maxLeaseTime().toNanos();
        return Mono.<T>defer(() -> {
            long start = scheduler.now(TimeUnit.NANOSECONDS) - spentNanos;
            // Renewal n is due at start + n x every (a fixed rate, so that virtual time sees every
            // tick wherever the replies fall); ticks missed during a stall are not caught up.
            AtomicLong tick = new AtomicLong(1);
            return Mono.defer(() -> {
                        long now = scheduler.now(TimeUnit.NANOSECONDS) - start;
                        long due = Math.max(tick.get(), now / every) * every;
                        tick.set(due / every + 1);
                        return due >= cap
                                ? Mono.delay(Duration.ofNanos(Math.max(0, cap - now)), scheduler)
                                        .then(Mono.<Void>error(() -> new LeaseTimeExceededException(name, options.maxLeaseTime())))
                                : Mono.delay(Duration.ofNanos(Math.max(0, due - now)), scheduler)
                                        .then(renew.apply(Duration.ofNanos(every)));
                    })
                    .repeat()
                    .then(Mono.never());
        }).doOnError(LockException.class, error -> listener.lost(name, error));
    }

    /**
     * One renewal: {@code once}, repeated with backoff (up to {@code every}) while it fails with a
     * {@code retryable} error and the lease is still valid; once the lease has run out, fails with
     * {@code ranOut}. Any other failure that is not a {@link LockException} becomes a
     * {@link LockLostException}.
     */
    public static Mono<Void> renewWhileValid(String name, LockLease lease, Duration every, LockOptions options,
            Scheduler scheduler, Mono<Void> once, Predicate<Throwable> retryable, Supplier<LockLostException> ranOut) {
        return Mono.defer(() -> {
            Duration left = Duration.ofNanos(lease.validUntilNanos() - System.nanoTime());
            Mono<Void> retried = once.retryWhen(Retry.backoff(Long.MAX_VALUE, options.minBackoff())
                    .maxBackoff(every)
                    .scheduler(scheduler)
                    .filter(retryable));
            // Not timeout(): it hands Reactor's dropped-error hook (an ERROR log) a renewal's failure
            // that crosses the watch's cancel, as one does when the body ends while a renewal that
            // found the lease lost is answered.
            Mono<Void> runsOut = Mono.delay(left.isNegative() ? Duration.ZERO : left, scheduler).then(Mono.error(ranOut));
            return Mono.firstWithSignal(retried, runsOut)
                    .onErrorMap(e -> !(e instanceof LockException),
                            e -> new LockLostException(name, "renewal failed", LockCore.unwrap(e)));
        });
    }
}
