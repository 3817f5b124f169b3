package io.reactivelock.spi;

import io.reactivelock.LockLease;
import io.reactivelock.MultiLockLease;
import io.reactivelock.ReactiveMultiLock;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.ReactiveSemaphore;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.BiFunction;
import java.util.function.Function;
import reactor.core.publisher.Mono;

/**
 * The primitives of the API as cheap views over a {@link LockCore}, written once for every
 * backend: a backend's client builds one core per primitive over its store and hands these out.
 * Each view checks its arguments when called, carries its own acquire timeout
 * ({@code withAcquireTimeout} returns another view on the same core) and opens the store's state
 * of an acquisition with the function it was given.
 */
public final class Primitives {

    private Primitives() {}

    /** Opens the store's state of one acquisition of {@code permits} of a semaphore's {@code capacity}. */
    @FunctionalInterface
    public interface PermitsOpener<C> {
        /** The state of the acquisition {@code request}, which asks for {@code permits} of {@code capacity}. */
        C open(Request request, int capacity, int permits);
    }

    /** Opens the store's state of one read or write acquisition. */
    @FunctionalInterface
    public interface ReadWriteOpener<C> {
        /** The state of the acquisition {@code request}, a writer if {@code write}, else a reader. */
        C open(Request request, boolean write);
    }

    /**
     * A semaphore of {@code capacity} permits per name over {@code core}, with the options' acquire timeout.
     *
     * @throws IllegalArgumentException if {@code capacity} is below 1
     */
    public static <C> ReactiveSemaphore semaphore(LockCore<C> core, int capacity, PermitsOpener<C> open) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be at least 1, got " + capacity);
        }
        return new Semaphore<>(core, capacity, core.options().acquireTimeout(), Objects.requireNonNull(open, "open"));
    }

    /** A read-write lock over {@code core}, with the options' acquire timeout. */
    public static <C> ReactiveReadWriteLock readWriteLock(LockCore<C> core, ReadWriteOpener<C> open) {
        return new ReadWrite<>(core, core.options().acquireTimeout(), Objects.requireNonNull(open, "open"));
    }

    /**
     * A multi-lock over {@code core}, with the options' acquire timeout: each acquisition's state is
     * opened with the names sorted, and {@code fencingTokens} reads each name's token from that
     * state and the core's lease once every name is held.
     */
    public static <C> ReactiveMultiLock multiLock(LockCore<C> core,
            BiFunction<Request, List<String>, C> open,
            BiFunction<C, LockLease, Map<String, Long>> fencingTokens) {
        return new Multi<>(core, core.options().acquireTimeout(), Objects.requireNonNull(open, "open"),
                Objects.requireNonNull(fencingTokens, "fencingTokens"));
    }

    private record Semaphore<C>(LockCore<C> core, int capacity, Duration acquireTimeout, PermitsOpener<C> open)
            implements ReactiveSemaphore {

        @Override
        public <T> Mono<T> withPermits(String name, int permits, Duration ttl,
                Function<? super LockLease, ? extends Mono<T>> body) {
            if (permits < 1 || permits > capacity) {
                IllegalArgumentException e = new IllegalArgumentException(
                        "permits must be from 1 to the capacity (" + capacity + "), got " + permits);
                core.listener().acquireFailed(String.valueOf(name), e, Duration.ZERO);
                throw e;
            }
            return core.withLock(name, ttl, acquireTimeout, a -> open.open(a, capacity, permits), body);
        }

        @Override
        public ReactiveSemaphore withAcquireTimeout(Duration timeout) {
            return new Semaphore<>(core, capacity, Arguments.checkAcquireTimeout(timeout), open);
        }

        @Override
        public String toString() {
            return "ReactiveSemaphore{capacity=" + capacity + ", acquireTimeout=" + acquireTimeout + "}";
        }
    }

    private record ReadWrite<C>(LockCore<C> core, Duration acquireTimeout, ReadWriteOpener<C> open)
            implements ReactiveReadWriteLock {

        @Override
        public <T> Mono<T> withReadLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
            return core.withLock(name, ttl, acquireTimeout, a -> open.open(a, false), body);
        }

        @Override
        public <T> Mono<T> withWriteLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
            return core.withLock(name, ttl, acquireTimeout, a -> open.open(a, true), body);
        }

        @Override
        public ReactiveReadWriteLock withAcquireTimeout(Duration timeout) {
            return new ReadWrite<>(core, Arguments.checkAcquireTimeout(timeout), open);
        }

        @Override
        public String toString() {
            return "ReactiveReadWriteLock{acquireTimeout=" + acquireTimeout + "}";
        }
    }

    private record Multi<C>(LockCore<C> core, Duration acquireTimeout,
            BiFunction<Request, List<String>, C> open,
            BiFunction<C, LockLease, Map<String, Long>> fencingTokens) implements ReactiveMultiLock {

        @Override
        public <T> Mono<T> withLocks(Collection<String> names, Duration ttl,
                Function<? super MultiLockLease, ? extends Mono<T>> body) {
            return MultiLocks.withLocks(core, names, ttl, acquireTimeout, open, fencingTokens, body);
        }

        @Override
        public ReactiveMultiLock withAcquireTimeout(Duration timeout) {
            return new Multi<>(core, Arguments.checkAcquireTimeout(timeout), open, fencingTokens);
        }

        @Override
        public String toString() {
            return "ReactiveMultiLock{acquireTimeout=" + acquireTimeout + "}";
        }
    }
}
