package io.reactivelock.testing;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLease;
import io.reactivelock.LockListener;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.internal.Arguments;
import io.reactivelock.internal.Leases;
import io.reactivelock.internal.SafeLockListener;
import io.reactivelock.internal.Tokens;
import io.reactivelock.internal.Watchdog;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.scheduler.Scheduler;

/**
 * A {@link ReactiveLock} held in this JVM's memory, for the tests of code that uses a lock: the
 * same contract as {@link io.reactivelock.ReactiveRedisLock} (mutual exclusion per name, renewal
 * while the body runs, lease loss, maximum lease time, increasing fencing tokens, the same typed
 * errors and argument checks) without Redis.
 *
 * <p>Every timer (acquire timeout, renewal, maximum lease time, the TTL of a
 * {@linkplain #lockElsewhere holder outside this process}) runs on {@link LockOptions#scheduler()},
 * resolved when {@code withLock} is subscribed, so a {@code StepVerifier.withVirtualTime} test
 * times out an acquisition or loses a lease without waiting. A release hands the lock to the
 * longest waiter at once; nothing polls or blocks.
 *
 * <pre>{@code
 * InMemoryReactiveLock locks = InMemoryReactiveLock.create();
 * StepVerifier.withVirtualTime(() -> new Payments(locks).pay(order))   // code under test
 *         .expectSubscription()
 *         .then(() -> locks.expire("order:42"))      // the lease is lost...
 *         .thenAwait(Duration.ofSeconds(10))          // ...and found lost at the next renewal
 *         .expectError(LockLostException.class)
 *         .verify();
 * }</pre>
 *
 * <p>Of the options it uses the acquire timeout, the renewal interval, the maximum lease time, the
 * scheduler and the {@linkplain LockOptions#listener() listener}, which hears the same events as
 * from the Redis lock, its durations measured on the scheduler's clock; waiters are served in
 * arrival order. A body running in this JVM always renews in time: its lease ends only by
 * {@link #expire}, the maximum lease time, or its end. {@link LockLease#remaining()} counts in
 * real time, also under virtual time. Thread-safe.
 */
public final class InMemoryReactiveLock implements ReactiveLock {

    private final LockOptions options;
    private final LockListener listener;
    private final Store store;

    private InMemoryReactiveLock(LockOptions options, Store store) {
        this.options = Objects.requireNonNull(options, "options");
        this.listener = SafeLockListener.of(options.listener());
        this.store = store;
    }

    /** An in-memory lock with the default options. */
    public static InMemoryReactiveLock create() {
        return create(LockOptions.defaults());
    }

    /** An in-memory lock with the given acquire timeout, renewal interval, maximum lease time, scheduler and listener. */
    public static InMemoryReactiveLock create(LockOptions options) {
        return new InMemoryReactiveLock(options, new Store());
    }

    /**
     * Another lock on the same locks as this one, with other options: as two clients of one Redis,
     * they exclude each other per name.
     */
    public InMemoryReactiveLock withOptions(LockOptions options) {
        return new InMemoryReactiveLock(options, store);
    }

    /**
     * A lease to hand to code under test that takes a {@link LockLease} directly, without running
     * any lock: valid for {@code remaining} from now, with a random token.
     */
    public static LockLease lease(String name, long fencingToken, Duration remaining) {
        Arguments.checkName(name);
        return Leases.create(name, Tokens.next(), fencingToken, System.nanoTime() + remaining.toNanos());
    }

    @Override
    public <T> Mono<T> withLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
        Arguments.checkCall(name, ttl, body, options, listener, () -> {});
        return Mono.defer(() -> {
            Session session = new Session(name, ttl, options.scheduler());
            Mono<Void> release = Mono.fromRunnable(session::leave);
            return Mono.usingWhen(session.acquire(), lease -> session.run(lease, body),
                            lease -> release, (lease, error) -> release, lease -> release)
                    .doFinally(signal -> session.leave());
        });
    }

    /** Whether anyone holds the lock {@code name} now. */
    public boolean isLocked(String name) {
        synchronized (store) {
            Slot slot = store.slots.get(name);
            return slot != null && slot.holder != null;
        }
    }

    /** The names of the locks held now, sorted. */
    public Set<String> lockedNames() {
        Set<String> names = new TreeSet<>();
        synchronized (store) {
            store.slots.forEach((name, slot) -> {
                if (slot.holder != null) {
                    names.add(name);
                }
            });
        }
        return names;
    }

    /**
     * Ends the current lease of {@code name} as if its TTL had run out unnoticed (a holder paused
     * past its lease): the lock goes to the next waiter at once, and the holder's body fails with
     * {@link LockLostException} at its next renewal.
     *
     * @return whether the lock was held
     */
    public boolean expire(String name) {
        Grant next;
        synchronized (store) {
            Slot slot = store.slots.get(name);
            if (slot == null || slot.holder == null) {
                return false;
            }
            next = free(name, slot);
        }
        if (next != null) {
            next.deliver();
        }
        return true;
    }

    /**
     * Takes the lock {@code name} for a holder outside this process that never renews nor releases
     * it, as a crashed instance would, if it is free: it expires after {@code ttl} on the
     * scheduler (virtual time inside {@code StepVerifier.withVirtualTime}).
     *
     * @return whether the lock was free and is now held by the outside holder
     */
    public boolean lockElsewhere(String name, Duration ttl) {
        Arguments.checkName(name);
        Arguments.checkTtl(ttl, options);
        Holding outsider = new Holding();
        synchronized (store) {
            Slot slot = store.slots.computeIfAbsent(name, n -> new Slot());
            if (slot.holder != null) {
                return false;
            }
            hold(slot, outsider);
            outsider.expiry = options.scheduler().schedule(() -> expireIfStillHeldBy(name, outsider),
                    ttl.toNanos(), TimeUnit.NANOSECONDS);
            return true;
        }
    }

    /** Makes {@code holding} the holder of a free slot. Under the monitor. */
    private void hold(Slot slot, Holding holding) {
        slot.holder = holding;
        holding.fencingToken = ++store.lastFencingToken;
    }

    private void expireIfStillHeldBy(String name, Holding holding) {
        Grant next;
        synchronized (store) {
            Slot slot = store.slots.get(name);
            if (slot == null || slot.holder != holding) {
                return;
            }
            next = free(name, slot);
        }
        if (next != null) {
            next.deliver();
        }
    }

    /** Frees a held slot and gives it to the longest waiter, whose grant the caller delivers. Under the monitor. */
    private @Nullable Grant free(String name, Slot slot) {
        Disposable expiry = Objects.requireNonNull(slot.holder).expiry;
        if (expiry != null) {
            expiry.dispose();
        }
        slot.holder = null;
        Session next = slot.waiters.poll();
        if (next == null) {
            store.slots.remove(name);
            return null;
        }
        hold(slot, next);
        return next.grant(true);
    }

    /** The locks of one or more {@link InMemoryReactiveLock}s; guarded by its own monitor. */
    private static final class Store {
        final Map<String, Slot> slots = new HashMap<>();
        long lastFencingToken;
    }

    /** One lock name: its holder and its waiters in arrival order. */
    private static final class Slot {
        @Nullable Holding holder;
        final ArrayDeque<Session> waiters = new ArrayDeque<>();
    }

    /** Whoever holds a slot: a session of {@code withLock}, or an outside holder that expires by its TTL. */
    private static class Holding {
        long fencingToken;
        @Nullable Disposable expiry;
    }

    /** A lease handed to a waiting session, delivered outside the monitor. */
    private record Grant(Session session, LockLease lease, boolean handOff) {
        void deliver() {
            if (handOff) {
                // Hop to the scheduler, as a reply from Redis would: the next body must not run on the releaser's stack.
                session.scheduler.schedule(() -> session.sink().success(lease));
            } else {
                session.sink().success(lease);
            }
        }
    }

    /** One subscription of {@code withLock}; every step that touches the slots holds the lock's monitor. */
    private final class Session extends Holding {
        private final String name;
        private final String token = Tokens.next();
        private final long ttlNanos;
        private final Scheduler scheduler;
        private final long startNanos;
        private @Nullable MonoSink<LockLease> sink;
        private boolean done;
        /** Whether the body was started, and when; guarded by the store's monitor. */
        private boolean running;
        private long heldSinceNanos;

        Session(String name, Duration ttl, Scheduler scheduler) {
            this.name = name;
            this.ttlNanos = ttl.toNanos();
            this.scheduler = scheduler;
            this.startNanos = scheduler.now(TimeUnit.NANOSECONDS);
        }

        MonoSink<LockLease> sink() {
            return Objects.requireNonNull(sink);
        }

        Grant grant(boolean handOff) {
            LockLease lease = Leases.create(name, token, fencingToken, System.nanoTime() + ttlNanos);
            return new Grant(this, lease, handOff);
        }

        Mono<LockLease> acquire() {
            Duration timeout = options.acquireTimeout();
            Mono<LockLease> granted = Mono.create(s -> {
                Grant now = null;
                boolean busy;
                synchronized (store) {
                    sink = s;
                    if (done) {
                        return; // cancelled from onSubscribe, before this callback ran
                    }
                    Slot slot = store.slots.computeIfAbsent(name, n -> new Slot());
                    busy = slot.holder != null;
                    if (!busy) {
                        hold(slot, this);
                        now = grant(false);
                    } else if (!timeout.isZero()) {
                        slot.waiters.add(this);
                    }
                }
                if (now != null) {
                    now.deliver();
                } else if (timeout.isZero()) {
                    s.error(busyFailure());
                }
            });
            return timeout.isZero() ? granted : granted.timeout(timeout, Mono.error(this::busyFailure), scheduler);
        }

        private LockAcquisitionException busyFailure() {
            Duration waited = Duration.ofNanos(scheduler.now(TimeUnit.NANOSECONDS) - startNanos);
            LockAcquisitionException failure = new LockAcquisitionException(name, 1, waited, null);
            listener.acquireFailed(name, failure, waited);
            return failure;
        }

        <T> Mono<T> run(LockLease lease, Function<? super LockLease, ? extends Mono<T>> body) {
            long now = scheduler.now(TimeUnit.NANOSECONDS);
            synchronized (store) {
                if (done) {
                    return Mono.empty(); // the subscriber left while the grant was delivered; leave() freed the lock
                }
                running = true;
                heldSinceNanos = now;
            }
            listener.acquired(name, Duration.ofNanos(now - startNanos));
            Mono<T> work = Mono.defer(() -> Objects.requireNonNull(body.apply(lease), "the body function returned null"));
            return Mono.firstWithSignal(work, watchdog(lease));
        }

        /** Never emits; fails when the lease is lost or the maximum lease time is reached. */
        private <T> Mono<T> watchdog(LockLease lease) {
            return Watchdog.watch(name, Duration.ofNanos(ttlNanos), options, scheduler, listener, every -> renew(lease));
        }

        private Mono<Void> renew(LockLease lease) {
            return Mono.defer(() -> {
                synchronized (store) {
                    Slot slot = store.slots.get(name);
                    if (slot == null || slot.holder != this) {
                        return Mono.error(new LockLostException(name, "it expired or another holder took it", null));
                    }
                }
                Leases.extendTo(lease, System.nanoTime() + ttlNanos);
                listener.renewed(name);
                return Mono.empty();
            });
        }

        /**
         * Ends this session: leaves the line, or frees the lock if it still holds it; a started
         * body is heard as released, even after its lease was lost. Idempotent.
         */
        void leave() {
            Grant next = null;
            boolean wasRunning;
            long heldSince;
            synchronized (store) {
                if (done) {
                    return;
                }
                done = true;
                wasRunning = running;
                heldSince = heldSinceNanos;
                Slot slot = store.slots.get(name);
                if (slot != null && slot.holder == this) {
                    next = free(name, slot);
                } else if (slot != null) {
                    slot.waiters.remove(this);
                }
            }
            if (wasRunning) {
                listener.released(name, Duration.ofNanos(scheduler.now(TimeUnit.NANOSECONDS) - heldSince));
            }
            if (next != null) {
                next.deliver();
            }
        }
    }
}
