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
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
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
 * real time, also under virtual time. Thread-safe, and no caller ever waits for a lock: the state
 * is an immutable map replaced by compare-and-set.
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
        Slot slot = store.slots.get().get(name);
        return slot != null && slot.holder() != null;
    }

    /** The names of the locks held now, sorted. */
    public Set<String> lockedNames() {
        Set<String> names = new TreeSet<>();
        store.slots.get().forEach((name, slot) -> {
            if (slot.holder() != null) {
                names.add(name);
            }
        });
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
        return freeIfHeldBy(name, null);
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
        boolean taken = store.change(slots -> {
            Slot slot = slots.getOrDefault(name, Slot.FREE);
            return slot.holder() != null
                    ? new Change<>(slots, false)
                    : new Change<>(with(slots, name, slot.heldBy(outsider, store.nextFencingToken())), true);
        });
        if (taken) {
            outsider.expiry = options.scheduler().schedule(() -> freeIfHeldBy(name, outsider),
                    ttl.toNanos(), TimeUnit.NANOSECONDS);
        }
        return taken;
    }

    /**
     * Frees {@code name} if {@code holding} holds it ({@code null}: whoever does) and hands it to
     * the longest waiter; returns whether it was freed.
     */
    private boolean freeIfHeldBy(String name, @Nullable Holding holding) {
        Freed freed = store.change(slots -> {
            Slot slot = slots.get(name);
            if (slot == null || slot.holder() == null || (holding != null && slot.holder() != holding)) {
                return new Change<>(slots, null);
            }
            return free(slots, name, slot);
        });
        if (freed == null) {
            return false;
        }
        freed.deliver();
        return true;
    }

    /** The slots after {@code name}'s holder left: the longest waiter holds it, or nobody. */
    private Change<Freed> free(Map<String, Slot> slots, String name, Slot slot) {
        Holding previous = Objects.requireNonNull(slot.holder());
        if (slot.waiters().isEmpty()) {
            return new Change<>(with(slots, name, null), new Freed(previous, null, 0));
        }
        Session next = slot.waiters().get(0);
        long fence = store.nextFencingToken();
        Slot handed = new Slot(next, fence, slot.waiters().subList(1, slot.waiters().size()));
        return new Change<>(with(slots, name, handed), new Freed(previous, next, fence));
    }

    /** A copy of {@code slots} with {@code name} set to {@code slot}, or removed if it is null. */
    private static Map<String, Slot> with(Map<String, Slot> slots, String name, @Nullable Slot slot) {
        Map<String, Slot> copy = new HashMap<>(slots);
        if (slot == null) {
            copy.remove(name);
        } else {
            copy.put(name, slot);
        }
        return Collections.unmodifiableMap(copy);
    }

    /**
     * The locks of one or more {@link InMemoryReactiveLock}s: an immutable map replaced by
     * compare-and-set, so that no caller ever waits for another (a test double of a non-blocking
     * lock must not block either).
     */
    private static final class Store {
        final AtomicReference<Map<String, Slot>> slots = new AtomicReference<>(Map.of());
        private final AtomicLong lastFencingToken = new AtomicLong();

        /**
         * A fencing token above every one issued before. Drawn inside a change that may be retried:
         * a retry skips numbers, and a holder's token is still drawn after its predecessor's.
         */
        long nextFencingToken() {
            return lastFencingToken.incrementAndGet();
        }

        /** Applies {@code change} atomically, retrying it on a concurrent change; returns its result. */
        <R> R change(Function<Map<String, Slot>, Change<R>> change) {
            while (true) {
                Map<String, Slot> before = slots.get();
                Change<R> c = change.apply(before);
                if (c.after() == before || slots.compareAndSet(before, c.after())) {
                    return c.result();
                }
            }
        }
    }

    /** The new slots, and what the change decided. */
    private record Change<R>(Map<String, Slot> after, R result) {}

    /** One lock name: its holder, the holder's fencing token and the waiters in arrival order. Immutable. */
    private record Slot(@Nullable Holding holder, long fencingToken, List<Session> waiters) {
        static final Slot FREE = new Slot(null, 0, List.of());

        Slot heldBy(Holding holding, long fence) {
            return new Slot(holding, fence, waiters);
        }

        Slot withWaiter(Session session) {
            List<Session> more = new ArrayList<>(waiters);
            more.add(session);
            return new Slot(holder, fencingToken, List.copyOf(more));
        }

        Slot without(Session session) {
            List<Session> fewer = new ArrayList<>(waiters);
            fewer.remove(session);
            return new Slot(holder, fencingToken, List.copyOf(fewer));
        }
    }

    /** Whoever holds a slot: a session of {@code withLock}, or an outside holder that expires by its TTL. */
    private static class Holding {
        volatile @Nullable Disposable expiry;
    }

    /** What freeing a slot did: the holder that left and the waiter (with its token) that got the lock, if any. */
    private record Freed(Holding previous, @Nullable Session next, long fence) {
        void deliver() {
            Disposable expiry = previous.expiry;
            if (expiry != null) {
                expiry.dispose();
            }
            if (next != null) {
                next.granted(fence, true);
            }
        }
    }

    /**
     * One subscription of {@code withLock}: WAITING until its body starts (RUNNING), DONE once it
     * left; each step that changes the slots is one {@link Store#change}.
     */
    private final class Session extends Holding {
        private static final int WAITING = 0;
        private static final int RUNNING = 1;
        private static final int DONE = 2;

        private final String name;
        private final String token = Tokens.next();
        private final long ttlNanos;
        private final Scheduler scheduler;
        private final long startNanos;
        private final AtomicInteger state = new AtomicInteger(WAITING);
        private volatile @Nullable MonoSink<LockLease> sink;
        private volatile long heldSinceNanos;

        Session(String name, Duration ttl, Scheduler scheduler) {
            this.name = name;
            this.ttlNanos = ttl.toNanos();
            this.scheduler = scheduler;
            this.startNanos = scheduler.now(TimeUnit.NANOSECONDS);
        }

        /** Completes the acquisition with a lease of {@code fence}; a hand-off hops to the scheduler, as a Redis reply would. */
        void granted(long fence, boolean handOff) {
            LockLease lease = Leases.create(name, token, fence, System.nanoTime() + ttlNanos);
            MonoSink<LockLease> s = Objects.requireNonNull(sink);
            if (handOff) {
                // The next body must not run on the releaser's stack.
                scheduler.schedule(() -> s.success(lease));
            } else {
                s.success(lease);
            }
        }

        Mono<LockLease> acquire() {
            Duration timeout = options.acquireTimeout();
            Mono<LockLease> granted = Mono.create(s -> {
                sink = s;
                long fence = store.change(slots -> {
                    Slot slot = slots.getOrDefault(name, Slot.FREE);
                    if (slot.holder() == null) {
                        long next = store.nextFencingToken();
                        return new Change<>(with(slots, name, slot.heldBy(this, next)), next);
                    }
                    return timeout.isZero()
                            ? new Change<>(slots, 0L)
                            : new Change<>(with(slots, name, slot.withWaiter(this)), 0L);
                });
                if (state.get() == DONE) {
                    leaveSlots(); // cancelled meanwhile (even from onSubscribe): take back what was just taken
                } else if (fence > 0) {
                    granted(fence, false);
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
            heldSinceNanos = now;
            if (!state.compareAndSet(WAITING, RUNNING)) {
                return Mono.empty(); // the subscriber left while the grant was delivered; leave() freed the lock
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
                Slot slot = store.slots.get().get(name);
                if (slot == null || slot.holder() != this) {
                    return Mono.error(new LockLostException(name, "it expired or another holder took it", null));
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
            int before = state.getAndSet(DONE);
            if (before == DONE) {
                return;
            }
            if (before == RUNNING) {
                listener.released(name, Duration.ofNanos(scheduler.now(TimeUnit.NANOSECONDS) - heldSinceNanos));
            }
            leaveSlots();
        }

        /** Takes this session out of its slot: frees the lock if it holds it, else leaves the line. */
        private void leaveSlots() {
            Freed freed = store.change(slots -> {
                Slot slot = slots.get(name);
                if (slot == null) {
                    return new Change<>(slots, null);
                }
                if (slot.holder() == this) {
                    return free(slots, name, slot);
                }
                return slot.waiters().contains(this)
                        ? new Change<>(with(slots, name, slot.without(this)), null)
                        : new Change<>(slots, null);
            });
            if (freed != null) {
                freed.deliver();
            }
        }
    }
}
