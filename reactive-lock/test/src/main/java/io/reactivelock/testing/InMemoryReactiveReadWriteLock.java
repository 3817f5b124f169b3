package io.reactivelock.testing;

import io.reactivelock.Primitive;
import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.spi.Arguments;
import io.reactivelock.spi.Lease;
import io.reactivelock.spi.LockCore;
import io.reactivelock.spi.LockStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * A {@link ReactiveReadWriteLock} held in this JVM's memory, for the tests of code that uses one:
 * the same contract as {@link io.reactivelock.ReactiveRedisReadWriteLock} (many readers or one
 * writer, writer preference, a lease per reader, increasing fencing tokens for writers, the typed
 * errors and argument checks, the listener events) without Redis, with every timer on
 * {@link LockOptions#scheduler()} so that {@code StepVerifier.withVirtualTime} drives it.
 *
 * <p>A release (or {@link #expire}, or a waiting writer leaving) wakes every waiter of the name,
 * which then tries again; nothing polls or blocks. A body running in this JVM always renews in
 * time: its lease ends only by {@link #expire}, the maximum lease time, or its end. Thread-safe.
 */
public final class InMemoryReactiveReadWriteLock implements ReactiveReadWriteLock {

    private final LockOptions options;
    private final Names names;
    private final LockCore<Call> core;

    private InMemoryReactiveReadWriteLock(LockOptions options, Names names) {
        this.options = options;
        this.names = names;
        this.core = new LockCore<>(options, Primitive.READ_WRITE_LOCK, new Store());
    }

    /** An in-memory read-write lock with the default options. */
    public static InMemoryReactiveReadWriteLock create() {
        return create(LockOptions.defaults());
    }

    /** An in-memory read-write lock with the given acquire timeout, renewal interval, maximum lease time, scheduler and listener. */
    public static InMemoryReactiveReadWriteLock create(LockOptions options) {
        return new InMemoryReactiveReadWriteLock(options, new Names());
    }

    /** Another lock on the same names as this one, with other options: as two clients of one Redis. */
    public InMemoryReactiveReadWriteLock withOptions(LockOptions options) {
        return new InMemoryReactiveReadWriteLock(options, names);
    }

    @Override
    public <T> Mono<T> withReadLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
        return core.withLock(name, ttl, options.acquireTimeout(), a -> new Call(a, false), body);
    }

    @Override
    public <T> Mono<T> withWriteLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
        return core.withLock(name, ttl, options.acquireTimeout(), a -> new Call(a, true), body);
    }

    /** Bodies running with their renewal watchdog now; zero once every call has ended. */
    public int activeLeases() {
        return core.activeLeases();
    }

    /** How many readers hold {@code name} now. */
    public int readers(String name) {
        State s = names.map.get(name);
        return s == null ? 0 : s.readers().size();
    }

    /** Whether a writer holds {@code name} now. */
    public boolean isWriteLocked(String name) {
        State s = names.map.get(name);
        return s != null && s.writer() != null;
    }

    /** How many writers wait for {@code name} now (while any does, new readers wait too). */
    public int writersWaiting(String name) {
        State s = names.map.get(name);
        return s == null ? 0 : s.waitingWriters().size();
    }

    /** The names held or waited for now, sorted. */
    public Set<String> names() {
        return new TreeSet<>(names.map.keySet());
    }

    /**
     * Ends every lease on {@code name} (the writer's and the readers') as if their TTL had run out
     * unnoticed: the lock is free at once, and each holder's body fails with
     * {@link LockLostException} at its next renewal.
     *
     * @return whether anyone held it
     */
    public boolean expire(String name) {
        List<Holder> dropped = new ArrayList<>();
        List<Call> waiters = new ArrayList<>();
        names.map.computeIfPresent(name, (k, s) -> {
            if (s.writer() != null) {
                dropped.add(s.writer());
            }
            dropped.addAll(s.readers());
            State after = new State(null, 0, List.of(), s.waitingWriters(), s.waitingReaders());
            waiters.addAll(after.waiters());
            return after.isEmpty() ? null : after;
        });
        dropped.forEach(Holder::stopExpiry);
        wake(waiters);
        return !dropped.isEmpty();
    }

    /**
     * Takes the read lock {@code name} for a reader outside this process that never renews nor
     * releases it, as a crashed instance would, if a reader may enter now: its lease ends after
     * {@code ttl} on the scheduler.
     *
     * @return whether the reader entered
     */
    public boolean readElsewhere(String name, Duration ttl) {
        return holdElsewhere(name, ttl, false);
    }

    /**
     * Takes the write lock {@code name} for a writer outside this process that never renews nor
     * releases it, if it is free: its lease ends after {@code ttl} on the scheduler.
     *
     * @return whether the writer took it
     */
    public boolean writeElsewhere(String name, Duration ttl) {
        return holdElsewhere(name, ttl, true);
    }

    private boolean holdElsewhere(String name, Duration ttl, boolean write) {
        Arguments.checkName(name);
        Arguments.checkTtl(ttl, options);
        Holder outsider = new Holder();
        boolean[] taken = {false};
        names.map.compute(name, (k, s) -> {
            State now = s == null ? State.FREE : s;
            State after = write ? now.write(outsider, names) : now.read(outsider);
            taken[0] = after != null;
            return taken[0] ? after : s;
        });
        if (taken[0]) {
            outsider.expiry = options.scheduler().schedule(() -> leave(name, outsider), ttl.toNanos(), TimeUnit.NANOSECONDS);
        }
        return taken[0];
    }

    @Override
    public String toString() {
        return "InMemoryReactiveReadWriteLock{" + options + "}";
    }

    /**
     * Takes {@code who} out of {@code name}'s holders and waiters; if it held the lock, or was a
     * waiting writer keeping readers out, wakes the waiters.
     */
    private void leave(String name, Holder who) {
        boolean[] freed = {false};
        List<Call> waiters = new ArrayList<>();
        names.map.computeIfPresent(name, (k, s) -> {
            freed[0] = s.writer() == who || s.readers().contains(who) || s.waitingWriters().contains(who);
            State after = s.without(who);
            waiters.addAll(after.waiters());
            return after.isEmpty() ? null : after;
        });
        who.stopExpiry();
        if (freed[0]) {
            wake(waiters);
        }
    }

    /** Wakes each waiter on the scheduler, as a Redis reply would arrive: its body must not run on the releaser's stack. */
    private void wake(List<Call> waiters) {
        for (Call w : waiters) {
            options.scheduler().schedule(w.acquisition::wake);
        }
    }

    /** The names of one or more locks made by {@link #withOptions}, and their writers' fencing tokens. */
    private static final class Names {
        final ConcurrentHashMap<String, State> map = new ConcurrentHashMap<>();
        final AtomicLong lastFencingToken = new AtomicLong();
    }

    /** One name: its writer (and fencing token) or readers, and who waits, in arrival order. Immutable. */
    private record State(@Nullable Holder writer, long fence, List<Holder> readers, List<Call> waitingWriters,
            List<Call> waitingReaders) {
        static final State FREE = new State(null, 0, List.of(), List.of(), List.of());

        /** The state with {@code h} writing, or null if it must wait. */
        @Nullable State write(Holder h, Names names) {
            if (writer != null || !readers.isEmpty()) {
                return null;
            }
            return new State(h, names.lastFencingToken.incrementAndGet(), readers, minus(waitingWriters, h), waitingReaders);
        }

        /** The state with {@code h} reading, or null if it must wait: a writer holds the lock or waits for it. */
        @Nullable State read(Holder h) {
            if (writer != null || !waitingWriters.isEmpty()) {
                return null;
            }
            return new State(writer, fence, plus(readers, h), waitingWriters, minus(waitingReaders, h));
        }

        State waiting(Call c) {
            return c.write
                    ? new State(writer, fence, readers, plus(minus(waitingWriters, c), c), waitingReaders)
                    : new State(writer, fence, readers, waitingWriters, plus(minus(waitingReaders, c), c));
        }

        State without(Holder h) {
            return new State(writer == h ? null : writer, writer == h ? 0 : fence, minus(readers, h),
                    minus(waitingWriters, h), minus(waitingReaders, h));
        }

        List<Call> waiters() {
            return Stream.concat(waitingWriters.stream(), waitingReaders.stream()).toList();
        }

        boolean isEmpty() {
            return writer == null && readers.isEmpty() && waitingWriters.isEmpty() && waitingReaders.isEmpty();
        }

        private static <H extends Holder> List<H> plus(List<H> list, H h) {
            List<H> more = new ArrayList<>(list);
            more.add(h);
            return List.copyOf(more);
        }

        private static <H extends Holder> List<H> minus(List<H> list, Holder h) {
            return list.contains(h) ? list.stream().filter(x -> x != h).toList() : list;
        }
    }

    /** Whoever holds a name: an acquisition, or an outside holder that expires by its TTL. */
    private static class Holder {
        volatile @Nullable Disposable expiry;

        void stopExpiry() {
            Disposable d = expiry;
            if (d != null) {
                d.dispose();
            }
        }
    }

    /** One acquisition, for reading or for writing. */
    private static final class Call extends Holder {
        final LockCore<Call>.Acquisition acquisition;
        final boolean write;

        Call(LockCore<Call>.Acquisition acquisition, boolean write) {
            this.acquisition = acquisition;
            this.write = write;
        }
    }

    /** The in-memory store: an attempt enters if it may, or waits until a release wakes it. */
    private final class Store implements LockStore<Call> {

        @Override
        public Call open(LockCore<Call>.Acquisition acquisition) {
            throw new UnsupportedOperationException("a read-write lock acquisition reads or writes");
        }

        @Override
        public CompletionStage<Reply> acquire(Call call) {
            long[] granted = {0};
            names.map.compute(call.acquisition.name(), (k, s) -> {
                State now = s == null ? State.FREE : s;
                if (now.writer() == call) {
                    granted[0] = now.fence();
                    return now;
                }
                if (now.readers().contains(call)) {
                    granted[0] = -1;
                    return now;
                }
                State after = call.write ? now.write(call, names) : now.read(call);
                if (after == null) {
                    return now.waiting(call);
                }
                granted[0] = call.write ? after.fence() : -1;
                return after;
            });
            long fence = granted[0];
            return CompletableFuture.completedFuture(fence == 0 ? Reply.busy()
                    : Reply.granted(fence > 0 ? fence : LockLease.NO_FENCING_TOKEN, call.acquisition.ttl().toNanos()));
        }

        @Override
        public Mono<Void> renew(Call call, Lease lease) {
            return Mono.defer(() -> {
                State s = names.map.get(call.acquisition.name());
                if (s == null || (s.writer() != call && !s.readers().contains(call))) {
                    return Mono.error(new LockLostException(call.acquisition.name(),
                            (call.write ? "its write lease" : "its read lease") + " expired or was taken", null));
                }
                lease.extendTo(System.nanoTime() + call.acquisition.ttl().toNanos());
                return Mono.empty();
            });
        }

        @Override
        public Mono<Void> release(Call call) {
            return Mono.fromRunnable(() -> leave(call.acquisition.name(), call));
        }

        @Override
        public CompletionStage<?> releaseAbandoned(Call call) {
            leave(call.acquisition.name(), call);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public boolean isTransient(Throwable error) {
            return false;
        }

        /** A waiter is woken by a release; it never polls. */
        @Override
        public @Nullable Duration pause(Call call, long retry) {
            return null;
        }

        @Override
        public boolean measuresOnSchedulerClock() {
            return true;
        }

        @Override
        public String toString() {
            return "InMemoryReactiveReadWriteLock.Store";
        }
    }
}
