package io.reactivelock.testing;

import io.reactivelock.Primitive;
import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveSemaphore;
import io.reactivelock.spi.Arguments;
import io.reactivelock.spi.Lease;
import io.reactivelock.spi.LockCore;
import io.reactivelock.spi.LockStore;
import io.reactivelock.spi.PermitArguments;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * A {@link ReactiveSemaphore} held in this JVM's memory, for the tests of code that uses one: the
 * same contract as {@link io.reactivelock.ReactiveRedisSemaphore} (admission against the capacity
 * each call gives, renewal, lost permits, the maximum lease time, the typed errors and argument
 * checks, the listener events) without Redis, with every timer on {@link LockOptions#scheduler()}
 * so that {@code StepVerifier.withVirtualTime} drives it.
 *
 * <p>A release (or {@link #expire}) wakes every waiter of the name, which then tries again; nothing
 * polls or blocks. A body running in this JVM always renews in time: its permits end only by
 * {@link #expire}, the maximum lease time, or its end. Thread-safe.
 */
public final class InMemoryReactiveSemaphore implements ReactiveSemaphore {

    private final LockOptions options;
    private final ConcurrentHashMap<String, Permits> names;
    private final LockCore<Call> core;

    private InMemoryReactiveSemaphore(LockOptions options, ConcurrentHashMap<String, Permits> names) {
        this.options = options;
        this.names = names;
        this.core = new LockCore<>(options, Primitive.SEMAPHORE, new Store());
    }

    /** An in-memory semaphore with the default options. */
    public static InMemoryReactiveSemaphore create() {
        return create(LockOptions.defaults());
    }

    /** An in-memory semaphore with the given acquire timeout, renewal interval, maximum lease time, scheduler and listener. */
    public static InMemoryReactiveSemaphore create(LockOptions options) {
        return new InMemoryReactiveSemaphore(options, new ConcurrentHashMap<>());
    }

    /** Another semaphore on the same permits as this one, with other options: as two clients of one Redis. */
    public InMemoryReactiveSemaphore withOptions(LockOptions options) {
        return new InMemoryReactiveSemaphore(options, names);
    }

    @Override
    public <T> Mono<T> withPermits(String name, int capacity, int n, Duration ttl,
            Function<? super LockLease, ? extends Mono<T>> body) {
        PermitArguments.check(name, capacity, n, core.listener());
        return core.withLock(name, ttl, options.acquireTimeout(), a -> new Call(a, capacity, n), body);
    }

    /** Bodies running with their renewal watchdog now; zero once every {@code withPermits} has ended. */
    public int activeLeases() {
        return core.activeLeases();
    }

    /** The permits of {@code name} held now. */
    public int permitsHeld(String name) {
        Permits p = names.get(name);
        return p == null ? 0 : p.used();
    }

    /** The names with permits held or callers waiting now, sorted. */
    public Set<String> names() {
        return new TreeSet<>(names.keySet());
    }

    /**
     * Ends every lease on {@code name} as if their TTL had run out unnoticed: the permits go back at
     * once, and each holder's body fails with {@link LockLostException} at its next renewal.
     *
     * @return whether any permits were held
     */
    public boolean expire(String name) {
        List<Holder> dropped = new ArrayList<>();
        List<Call> waiters = new ArrayList<>();
        names.computeIfPresent(name, (k, p) -> {
            dropped.addAll(p.holders());
            waiters.addAll(p.waiters());
            return p.waiters().isEmpty() ? null : new Permits(List.of(), p.waiters());
        });
        dropped.forEach(Holder::stopExpiry);
        wake(waiters);
        return !dropped.isEmpty();
    }

    /**
     * Takes {@code n} permits of {@code name} for a holder outside this process that never renews
     * nor releases them, as a crashed instance would, if they fit in {@code capacity}: they come
     * back after {@code ttl} on the scheduler (virtual time inside {@code StepVerifier.withVirtualTime}).
     *
     * @return whether the permits were taken
     */
    public boolean holdElsewhere(String name, int capacity, int n, Duration ttl) {
        Arguments.checkName(name);
        Arguments.checkTtl(ttl, options);
        PermitArguments.check(name, capacity, n, core.listener());
        Holder outsider = new Holder(n);
        boolean[] taken = {false};
        names.compute(name, (k, p) -> {
            Permits now = p == null ? Permits.NONE : p;
            taken[0] = now.used() + n <= capacity;
            return taken[0] ? now.withHolder(outsider) : p;
        });
        if (taken[0]) {
            outsider.expiry = options.scheduler().schedule(() -> leave(name, outsider), ttl.toNanos(), TimeUnit.NANOSECONDS);
        }
        return taken[0];
    }

    @Override
    public String toString() {
        return "InMemoryReactiveSemaphore{" + options + "}";
    }

    /** Takes {@code who} off the holders and waiters of {@code name}; if it held permits, wakes the waiters. */
    private void leave(String name, Holder who) {
        boolean[] held = {false};
        List<Call> waiters = new ArrayList<>();
        names.computeIfPresent(name, (k, p) -> {
            held[0] = p.holders().contains(who);
            Permits after = p.without(who);
            waiters.addAll(after.waiters());
            return after.isEmpty() ? null : after;
        });
        who.stopExpiry();
        if (held[0]) {
            wake(waiters);
        }
    }

    /** Wakes each waiter on the scheduler, as a Redis reply would arrive: its body must not run on the releaser's stack. */
    private void wake(List<Call> waiters) {
        for (Call w : waiters) {
            options.scheduler().schedule(w.acquisition::wake);
        }
    }

    /** The holders and waiters of one name, in arrival order. Immutable. */
    private record Permits(List<Holder> holders, List<Call> waiters) {
        static final Permits NONE = new Permits(List.of(), List.of());

        int used() {
            return holders.stream().mapToInt(h -> h.n).sum();
        }

        boolean isEmpty() {
            return holders.isEmpty() && waiters.isEmpty();
        }

        Permits withHolder(Holder h) {
            List<Holder> more = new ArrayList<>(holders);
            more.add(h);
            return new Permits(List.copyOf(more), waiters.stream().filter(w -> w != h).toList());
        }

        Permits withWaiter(Call c) {
            List<Call> more = new ArrayList<>(waiters);
            more.add(c);
            return new Permits(holders, List.copyOf(more));
        }

        Permits without(Holder h) {
            return new Permits(holders.stream().filter(x -> x != h).toList(), waiters.stream().filter(x -> x != h).toList());
        }
    }

    /** Whoever holds permits: an acquisition, or an outside holder that expires by its TTL. */
    private static class Holder {
        final int n;
        volatile @Nullable Disposable expiry;

        Holder(int n) {
            this.n = n;
        }

        void stopExpiry() {
            Disposable d = expiry;
            if (d != null) {
                d.dispose();
            }
        }
    }

    /** One acquisition of {@code n} of {@code capacity} permits. */
    private static final class Call extends Holder {
        final LockCore<Call>.Acquisition acquisition;
        final int capacity;

        Call(LockCore<Call>.Acquisition acquisition, int capacity, int n) {
            super(n);
            this.acquisition = acquisition;
            this.capacity = capacity;
        }
    }

    /** The in-memory store: an attempt takes the permits if they fit, or waits until a release wakes it. */
    private final class Store implements LockStore<Call> {

        @Override
        public Call open(LockCore<Call>.Acquisition acquisition) {
            throw new UnsupportedOperationException("a semaphore acquisition needs its capacity and permits");
        }

        @Override
        public CompletionStage<Reply> acquire(Call call) {
            boolean[] granted = {false};
            names.compute(call.acquisition.name(), (k, p) -> {
                Permits now = p == null ? Permits.NONE : p;
                if (now.holders().contains(call)) {
                    granted[0] = true;
                    return now;
                }
                if (now.used() + call.n <= call.capacity) {
                    granted[0] = true;
                    return now.withHolder(call);
                }
                return now.waiters().contains(call) ? now : now.withWaiter(call);
            });
            return CompletableFuture.completedFuture(granted[0]
                    ? Reply.granted(LockLease.NO_FENCING_TOKEN, call.acquisition.ttl().toNanos())
                    : Reply.busy());
        }

        @Override
        public Mono<Void> renew(Call call, Lease lease) {
            return Mono.defer(() -> {
                Permits p = names.get(call.acquisition.name());
                if (p == null || !p.holders().contains(call)) {
                    return Mono.error(new LockLostException(call.acquisition.name(), "its permits expired", null));
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
            return "InMemoryReactiveSemaphore.Store";
        }
    }
}
