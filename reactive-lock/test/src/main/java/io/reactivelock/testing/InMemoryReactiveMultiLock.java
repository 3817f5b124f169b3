package io.reactivelock.testing;

import io.reactivelock.LockAcquisitionException.Reason;
import io.reactivelock.Primitive;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.MultiLockLease;
import io.reactivelock.ReactiveMultiLock;
import io.reactivelock.spi.Arguments;
import io.reactivelock.spi.Lease;
import io.reactivelock.spi.LockCore;
import io.reactivelock.spi.LockStore;
import io.reactivelock.spi.MultiLocks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * A {@link ReactiveMultiLock} held in this JVM's memory, for the tests of code that uses one: the
 * same contract as {@link io.reactivelock.ReactiveRedisMultiLock} (all names or none, no deadlock
 * whatever the order of the names, a fencing token per name above every earlier holder's, renewal,
 * lost leases, the typed errors and argument checks, the listener events) without Redis, with
 * every timer on {@link LockOptions#scheduler()} so that {@code StepVerifier.withVirtualTime}
 * drives it.
 *
 * <p>Its names are its own (and those of the locks made by {@link #withOptions}): unlike the Redis
 * multi-lock, it does not exclude an {@link InMemoryReactiveLock} of the same name. A waiter waits
 * on the name that refused it, and a release (or {@link #expire}) of that name wakes it; nothing
 * polls or blocks. A body running in this JVM always renews in time: its lease ends only by
 * {@link #expire}, the maximum lease time, or its end. Thread-safe, and no caller ever waits for
 * another: the state is an immutable map replaced by compare-and-set.
 */
public final class InMemoryReactiveMultiLock implements ReactiveMultiLock {

    private final LockOptions options;
    private final Names names;
    private final LockCore<Call> core;

    private InMemoryReactiveMultiLock(LockOptions options, Names names) {
        this.options = options;
        this.names = names;
        this.core = new LockCore<>(options, Primitive.MULTI_LOCK, new Store());
    }

    /** An in-memory multi-lock with the default options. */
    public static InMemoryReactiveMultiLock create() {
        return create(LockOptions.defaults());
    }

    /** An in-memory multi-lock with the given acquire timeout, renewal interval, maximum lease time, scheduler and listener. */
    public static InMemoryReactiveMultiLock create(LockOptions options) {
        return new InMemoryReactiveMultiLock(options, new Names());
    }

    /** Another multi-lock on the same names as this one, with other options: as two clients of one Redis. */
    public InMemoryReactiveMultiLock withOptions(LockOptions options) {
        return new InMemoryReactiveMultiLock(options, names);
    }

    @Override
    public <T> Mono<T> withLocks(Collection<String> lockNames, Duration ttl,
            Function<? super MultiLockLease, ? extends Mono<T>> body) {
        return MultiLocks.withLocks(core, lockNames, ttl, Call::new, (call, lease) -> {
            Map<String, Long> tokens = new HashMap<>();
            call.names.forEach(name -> tokens.put(name, lease.fencingToken()));
            return tokens;
        }, body);
    }

    /** Bodies running with their renewal watchdog now; zero once every {@code withLocks} has ended. */
    public int activeLeases() {
        return core.activeLeases();
    }

    /** Whether anyone holds {@code name} now. */
    public boolean isLocked(String name) {
        Slot slot = names.map.get().get(name);
        return slot != null && slot.holder() != null;
    }

    /** The names held now, sorted. */
    public Set<String> lockedNames() {
        Set<String> held = new TreeSet<>();
        names.map.get().forEach((name, slot) -> {
            if (slot.holder() != null) {
                held.add(name);
            }
        });
        return held;
    }

    /** The names held or waited for now, sorted. */
    public Set<String> names() {
        return new TreeSet<>(names.map.get().keySet());
    }

    /**
     * Ends the lease on {@code name} as if its TTL had run out unnoticed: the name is free at once,
     * its waiters are woken, and the holder's body fails with {@link LockLostException} at its next
     * renewal (the holder's other names are released then).
     *
     * @return whether the name was held
     */
    public boolean expire(String name) {
        return free(name, null);
    }

    /**
     * Takes {@code name} for a holder outside this process that never renews nor releases it, as a
     * crashed instance would, if it is free: it expires after {@code ttl} on the scheduler.
     *
     * @return whether the name was free and is now held by the outside holder
     */
    public boolean lockElsewhere(String name, Duration ttl) {
        Arguments.checkName(name);
        Arguments.checkTtl(ttl, options);
        Holder outsider = new Holder();
        boolean taken = names.change(map -> {
            Slot slot = map.getOrDefault(name, Slot.FREE);
            return slot.holder() != null ? new Change<>(map, false)
                    : new Change<>(with(map, name, new Slot(outsider, names.nextFencingToken(), slot.waiters())), true);
        });
        if (taken) {
            outsider.expiry = options.scheduler().schedule(() -> free(name, outsider), ttl.toNanos(), TimeUnit.NANOSECONDS);
        }
        return taken;
    }

    @Override
    public String toString() {
        return "InMemoryReactiveMultiLock{" + options + "}";
    }

    /** Frees {@code name} if {@code holder} holds it ({@code null}: whoever does) and wakes its waiters. */
    private boolean free(String name, @Nullable Holder holder) {
        Slot freed = names.change(map -> {
            Slot slot = map.get(name);
            if (slot == null || slot.holder() == null || (holder != null && slot.holder() != holder)) {
                return new Change<>(map, null);
            }
            return new Change<>(with(map, name, slot.waiters().isEmpty() ? null : new Slot(null, 0, slot.waiters())), slot);
        });
        if (freed == null) {
            return false;
        }
        Objects.requireNonNull(freed.holder()).stopExpiry();
        wake(freed.waiters());
        return true;
    }

    /** Wakes each waiter on the scheduler, as a Redis reply would arrive: its body must not run on the releaser's stack. */
    private void wake(List<Call> waiters) {
        for (Call w : waiters) {
            options.scheduler().schedule(w.acquisition::wake);
        }
    }

    private static Map<String, Slot> with(Map<String, Slot> map, String name, @Nullable Slot slot) {
        Map<String, Slot> copy = new HashMap<>(map);
        if (slot == null) {
            copy.remove(name);
        } else {
            copy.put(name, slot);
        }
        return Collections.unmodifiableMap(copy);
    }

    /** The names of one or more multi-locks made by {@link #withOptions}, and their fencing tokens. */
    private static final class Names {
        final AtomicReference<Map<String, Slot>> map = new AtomicReference<>(Map.of());
        private final AtomicLong lastFencingToken = new AtomicLong();

        /** A fencing token above every one issued before; a retried change skips numbers. */
        long nextFencingToken() {
            return lastFencingToken.incrementAndGet();
        }

        /** Applies {@code change} atomically, retrying it on a concurrent change; returns its result. */
        <R> R change(Function<Map<String, Slot>, Change<R>> change) {
            while (true) {
                Map<String, Slot> before = map.get();
                Change<R> c = change.apply(before);
                if (c.after() == before || map.compareAndSet(before, c.after())) {
                    return c.result();
                }
            }
        }
    }

    /** The new state, and what the change decided. */
    private record Change<R>(Map<String, Slot> after, R result) {}

    /** One name: its holder (with its fencing token), or nobody, and who waits for it. Immutable. */
    private record Slot(@Nullable Holder holder, long fence, List<Call> waiters) {
        static final Slot FREE = new Slot(null, 0, List.of());

        Slot withoutWaiter(Call call) {
            return waiters.contains(call) ? new Slot(holder, fence, waiters.stream().filter(w -> w != call).toList()) : this;
        }

        Slot withWaiter(Call call) {
            if (waiters.contains(call)) {
                return this;
            }
            List<Call> more = new ArrayList<>(waiters);
            more.add(call);
            return new Slot(holder, fence, List.copyOf(more));
        }

        boolean isEmpty() {
            return holder == null && waiters.isEmpty();
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

    /** One acquisition of {@code names} (sorted). */
    private static final class Call extends Holder {
        final LockCore<Call>.Acquisition acquisition;
        final List<String> names;

        Call(LockCore<Call>.Acquisition acquisition, List<String> names) {
            this.acquisition = acquisition;
            this.names = names;
        }
    }

    /**
     * The in-memory store: an attempt takes every name or, when one is held, none, and then waits
     * on that name until its release wakes it.
     */
    private final class Store implements LockStore<Call> {

        @Override
        public Call open(LockCore<Call>.Acquisition acquisition) {
            throw new UnsupportedOperationException("a multi-lock acquisition needs its names");
        }

        @Override
        public CompletionStage<Reply> acquire(Call call) {
            String[] busy = {null};
            long fence = names.change(map -> {
                String refusing = call.names.stream()
                        .filter(name -> {
                            Holder h = map.getOrDefault(name, Slot.FREE).holder();
                            return h != null && h != call;
                        })
                        .findFirst().orElse(null);
                busy[0] = refusing;
                Map<String, Slot> after = new HashMap<>(map);
                long next = refusing == null ? names.nextFencingToken() : 0;
                for (String name : call.names) {
                    Slot slot = map.getOrDefault(name, Slot.FREE).withoutWaiter(call);
                    if (refusing == null) {
                        slot = new Slot(call, next, slot.waiters());
                    } else if (name.equals(refusing)) {
                        slot = slot.withWaiter(call);
                    }
                    if (slot.isEmpty()) {
                        after.remove(name);
                    } else {
                        after.put(name, slot);
                    }
                }
                return new Change<>(Collections.unmodifiableMap(after), next);
            });
            return CompletableFuture.completedFuture(fence > 0
                    ? Reply.granted(fence, call.acquisition.ttl().toNanos())
                    : Reply.refused(Reason.BUSY, "'" + busy[0] + "' stayed busy", null));
        }

        @Override
        public Mono<Void> renew(Call call, Lease lease) {
            return Mono.defer(() -> {
                Map<String, Slot> map = names.map.get();
                for (String name : call.names) {
                    Slot slot = map.get(name);
                    if (slot == null || slot.holder() != call) {
                        return Mono.error(new LockLostException(name, "it expired or another holder took it, so the locks "
                                + call.acquisition.name() + " are lost", null));
                    }
                }
                lease.extendTo(System.nanoTime() + call.acquisition.ttl().toNanos());
                return Mono.empty();
            });
        }

        @Override
        public Mono<Void> release(Call call) {
            return Mono.fromRunnable(() -> leave(call));
        }

        @Override
        public CompletionStage<?> releaseAbandoned(Call call) {
            leave(call);
            return CompletableFuture.completedFuture(null);
        }

        /** Frees the names {@code call} holds and takes it out of every line; wakes the waiters of what it freed. */
        private void leave(Call call) {
            List<Call> woken = names.change(map -> {
                Map<String, Slot> after = new HashMap<>(map);
                List<Call> waiters = new ArrayList<>();
                for (String name : call.names) {
                    Slot slot = map.get(name);
                    if (slot == null) {
                        continue;
                    }
                    slot = slot.withoutWaiter(call);
                    if (slot.holder() == call) {
                        waiters.addAll(slot.waiters());
                        slot = new Slot(null, 0, slot.waiters());
                    }
                    if (slot.isEmpty()) {
                        after.remove(name);
                    } else {
                        after.put(name, slot);
                    }
                }
                return new Change<>(Collections.unmodifiableMap(after), waiters);
            });
            wake(woken);
        }

        @Override
        public boolean isTransient(Throwable error) {
            return false;
        }

        /** A waiter is woken by a release of the name that refused it; it never polls. */
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
            return "InMemoryReactiveMultiLock.Store";
        }
    }
}
