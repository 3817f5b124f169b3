package io.reactivelock.testing;

import io.reactivelock.Primitive;
import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.spi.Arguments;
import io.reactivelock.spi.Lease;
import io.reactivelock.spi.LockCore;
import io.reactivelock.spi.LockStore;
import io.reactivelock.spi.Tokens;
import java.time.Duration;
import java.util.ArrayList;
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
    private final Slots slots;
    private final LockCore<Session> core;

    private InMemoryReactiveLock(LockOptions options, Slots slots) {
        this.options = Objects.requireNonNull(options, "options");
        this.slots = slots;
        this.core = new LockCore<>(options, Primitive.LOCK, new Store());
    }

    /** An in-memory lock with the default options. */
    public static InMemoryReactiveLock create() {
        return create(LockOptions.defaults());
    }

    /** An in-memory lock with the given acquire timeout, renewal interval, maximum lease time, scheduler and listener. */
    public static InMemoryReactiveLock create(LockOptions options) {
        return new InMemoryReactiveLock(options, new Slots());
    }

    /**
     * Another lock on the same locks as this one, with other options: as two clients of one Redis,
     * they exclude each other per name.
     */
    public InMemoryReactiveLock withOptions(LockOptions options) {
        return new InMemoryReactiveLock(options, slots);
    }

    /**
     * A lease to hand to code under test that takes a {@link LockLease} directly, without running
     * any lock: valid for {@code remaining} from now, with a random token.
     */
    public static LockLease lease(String name, long fencingToken, Duration remaining) {
        Arguments.checkName(name);
        return new Lease(name, Tokens.next(), fencingToken, System.nanoTime() + remaining.toNanos());
    }

    @Override
    public <T> Mono<T> withLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
        return core.withLock(name, ttl, body);
    }

    @Override
    public ReactiveLock withAcquireTimeout(Duration acquireTimeout) {
        return core.withAcquireTimeout(acquireTimeout);
    }

    /** Bodies running with their renewal watchdog now; zero once every {@code withLock} has ended. */
    public int activeLeases() {
        return core.activeLeases();
    }

    /** Whether anyone holds the lock {@code name} now. */
    public boolean isLocked(String name) {
        Slot slot = slots.map.get().get(name);
        return slot != null && slot.holder() != null;
    }

    /** The names of the locks held now, sorted. */
    public Set<String> lockedNames() {
        Set<String> names = new TreeSet<>();
        slots.map.get().forEach((name, slot) -> {
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
        boolean taken = slots.change(map -> {
            Slot slot = map.getOrDefault(name, Slot.FREE);
            return slot.holder() != null
                    ? new Change<>(map, false)
                    : new Change<>(with(map, name, slot.heldBy(outsider, slots.nextFencingToken())), true);
        });
        if (taken) {
            outsider.expiry = options.scheduler().schedule(() -> freeIfHeldBy(name, outsider),
                    ttl.toNanos(), TimeUnit.NANOSECONDS);
        }
        return taken;
    }

    @Override
    public String toString() {
        return "InMemoryReactiveLock{" + options + "}";
    }

    /**
     * Frees {@code name} if {@code holding} holds it ({@code null}: whoever does) and hands it to
     * the longest waiter; returns whether it was freed.
     */
    private boolean freeIfHeldBy(String name, @Nullable Holding holding) {
        Freed freed = slots.change(map -> {
            Slot slot = map.get(name);
            if (slot == null || slot.holder() == null || (holding != null && slot.holder() != holding)) {
                return new Change<>(map, null);
            }
            return free(map, name, slot);
        });
        if (freed == null) {
            return false;
        }
        freed.deliver(options);
        return true;
    }

    /** The slots after {@code name}'s holder left: the longest waiter holds it, or nobody. */
    private Change<Freed> free(Map<String, Slot> map, String name, Slot slot) {
        Holding previous = Objects.requireNonNull(slot.holder());
        if (slot.waiters().isEmpty()) {
            return new Change<>(with(map, name, null), new Freed(previous, null, 0));
        }
        Session next = slot.waiters().get(0);
        long fence = slots.nextFencingToken();
        Slot handed = new Slot(next, fence, slot.waiters().subList(1, slot.waiters().size()));
        return new Change<>(with(map, name, handed), new Freed(previous, next, fence));
    }

    /** A copy of {@code map} with {@code name} set to {@code slot}, or removed if it is null. */
    private static Map<String, Slot> with(Map<String, Slot> map, String name, @Nullable Slot slot) {
        Map<String, Slot> copy = new HashMap<>(map);
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
    private static final class Slots {
        final AtomicReference<Map<String, Slot>> map = new AtomicReference<>(Map.of());
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
                Map<String, Slot> before = map.get();
                Change<R> c = change.apply(before);
                if (c.after() == before || map.compareAndSet(before, c.after())) {
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

    /** Whoever holds a slot: an acquisition, or an outside holder that expires by its TTL. */
    private static class Holding {
        volatile @Nullable Disposable expiry;
    }

    /** What freeing a slot did: the holder that left and the waiter (with its token) that got the lock, if any. */
    private record Freed(Holding previous, @Nullable Session next, long fence) {
        void deliver(LockOptions options) {
            Disposable expiry = previous.expiry;
            if (expiry != null) {
                expiry.dispose();
            }
            Session s = next;
            if (s != null) {
                long sentAt = System.nanoTime();
                // On the scheduler, as a Redis reply would arrive: the next body must not run on the releaser's stack.
                options.scheduler().schedule(() -> s.acquisition.handOver(fence, sentAt));
            }
        }
    }

    /** One acquisition's place in the slots: the holder of a slot or one of its waiters. */
    private static final class Session extends Holding {
        final LockCore<Session>.Acquisition acquisition;

        Session(LockCore<Session>.Acquisition acquisition) {
            this.acquisition = acquisition;
        }
    }

    /**
     * The in-memory store: an attempt takes a free slot or joins its line, and a release hands the
     * slot to the longest waiter, so waiters never poll: they pause until handed the lock.
     */
    private final class Store implements LockStore<Session> {

        @Override
        public Session open(LockCore<Session>.Acquisition acquisition) {
            return new Session(acquisition);
        }

        @Override
        public CompletionStage<Reply> acquire(Session session) {
            String name = session.acquisition.name();
            long fence = slots.change(map -> {
                Slot slot = map.getOrDefault(name, Slot.FREE);
                if (slot.holder() == session) {
                    return new Change<>(map, slot.fencingToken()); // handed over a while ago
                }
                if (slot.holder() == null) {
                    long next = slots.nextFencingToken();
                    return new Change<>(with(map, name, slot.heldBy(session, next)), next);
                }
                return slot.waiters().contains(session)
                        ? new Change<>(map, 0L)
                        : new Change<>(with(map, name, slot.withWaiter(session)), 0L);
            });
            return CompletableFuture.completedFuture(fence > 0
                    ? Reply.granted(fence, session.acquisition.ttl().toNanos())
                    : Reply.busy());
        }

        @Override
        public Mono<Void> renew(Session session, Lease lease) {
            return Mono.defer(() -> {
                Slot slot = slots.map.get().get(session.acquisition.name());
                if (slot == null || slot.holder() != session) {
                    return Mono.error(new LockLostException(session.acquisition.name(), "it expired or another holder took it",
                            null));
                }
                lease.extendTo(System.nanoTime() + session.acquisition.ttl().toNanos());
                return Mono.empty();
            });
        }

        @Override
        public Mono<Void> release(Session session) {
            return Mono.fromRunnable(() -> leave(session));
        }

        @Override
        public CompletionStage<?> releaseAbandoned(Session session) {
            leave(session);
            return CompletableFuture.completedFuture(null);
        }

        /** Frees the lock if {@code session} holds it (handing it to the next waiter), else takes it out of the line. */
        private void leave(Session session) {
            String name = session.acquisition.name();
            Freed freed = slots.change(map -> {
                Slot slot = map.get(name);
                if (slot == null) {
                    return new Change<>(map, null);
                }
                if (slot.holder() == session) {
                    return free(map, name, slot);
                }
                return slot.waiters().contains(session)
                        ? new Change<>(with(map, name, slot.without(session)), null)
                        : new Change<>(map, null);
            });
            if (freed != null) {
                freed.deliver(options);
                if (freed.next() != null) {
                    session.acquisition.handedOff();
                }
            }
        }

        @Override
        public boolean isTransient(Throwable error) {
            return false;
        }

        /** A waiter is in the slot's line: it is handed the lock, so it never polls. */
        @Override
        public @Nullable Duration pause(Session session, long retry) {
            return null;
        }

        @Override
        public boolean measuresOnSchedulerClock() {
            return true;
        }

        @Override
        public String toString() {
            return "InMemoryReactiveLock.Store";
        }
    }
}
