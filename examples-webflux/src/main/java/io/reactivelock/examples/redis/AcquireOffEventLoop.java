package io.reactivelock.examples.redis;

import io.reactivelock.LockLease;
import io.reactivelock.ReactiveLock;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Function;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * WORKAROUND, to delete once reactive-lock is fixed: subscribes {@code withLock} on
 * {@link Schedulers#boundedElastic()} instead of the caller's thread.
 *
 * <p>reactive-lock 0.1.0-SNAPSHOT draws each acquisition's ownership token from
 * {@code new SecureRandom()} when {@code withLock} is subscribed. On Linux that is NativePRNG,
 * which reads {@code /dev/urandom} with a {@code FileInputStream} on the calling thread: blocking
 * I/O on a Netty event loop (BlockHound reports {@code FileInputStream#readBytes} from
 * {@code io.reactivelock.internal.Tokens.next}). Everything after subscription (replies, retries,
 * renewal, release) stays where the library puts it.
 */
final class AcquireOffEventLoop implements ReactiveLock {

    private final ReactiveLock delegate;

    AcquireOffEventLoop(ReactiveLock delegate) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
    }

    @Override
    public <T> Mono<T> withLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
        return delegate.withLock(name, ttl, body).subscribeOn(Schedulers.boundedElastic());
    }
}
