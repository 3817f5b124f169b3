package io.reactivelock.testing;

import io.reactivelock.LockClosedException;
import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.Primitive;
import io.reactivelock.ReactiveLock;
import io.reactivelock.ReactiveLockClient;
import io.reactivelock.ReactiveMultiLock;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.ReactiveSemaphore;
import io.reactivelock.spi.Arguments;
import io.reactivelock.spi.Lease;
import io.reactivelock.spi.LockCore;
import io.reactivelock.spi.Primitives;
import io.reactivelock.spi.Tokens;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The in-memory client, for the tests of code that uses the library: a {@link ReactiveLockClient}
 * like {@link io.reactivelock.redis.ReactiveRedisLock}, it is a {@link ReactiveLock} and hands out the
 * other primitives on the same keys, with the same contracts (mutual exclusion, renewal while the
 * body runs, lost leases, the maximum lease time, increasing fencing tokens, the typed errors and
 * argument checks, the listener events) and the same cross-primitive rules: a lock, a
 * {@linkplain #fair() fair lock} and a {@linkplain #multiLock() multi-lock} of one name exclude each
 * other; a {@linkplain #semaphore(int) semaphore} and a {@linkplain #readWriteLock() read-write
 * lock} of that name are keys of their own.
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
 * <p>Every timer (acquire timeout, renewal, maximum lease time, the TTL of a holder
 * {@linkplain #lockElsewhere outside this process}) runs on {@link LockOptions#scheduler()}, so a
 * {@code StepVerifier.withVirtualTime} test times out an acquisition or loses a lease without
 * waiting; listener durations are measured on the scheduler's clock. A release hands the lock to
 * its longest waiter at once, and wakes the waiters of permits and of a read-write lock; nothing
 * polls, sleeps or blocks. A body running in this JVM always renews in time: its lease ends only by
 * an {@code expire} hook, the maximum lease time, or its end. {@link LockLease#remaining()} counts
 * in real time, also under virtual time. Thread-safe.
 *
 * <p>Needs only reactive-lock and Reactor: the test frameworks this artifact lists as optional
 * are for its published contracts.
 */
public final class InMemoryReactiveLock implements ReactiveLockClient, AutoCloseable {

    private final LockOptions options;
    private final Keyspace keys;
    private final LockCore<Keyspace.Call> core;
    private final LockCore<Keyspace.Call> semaphoreCore;
    private final LockCore<Keyspace.Call> readWriteCore;
    private final LockCore<Keyspace.Call> multiCore;
    private final List<LockCore<?>> cores;
    private final AtomicBoolean closed = new AtomicBoolean();

    private InMemoryReactiveLock(LockOptions options, Keyspace keys) {
        this.options = Objects.requireNonNull(options, "options");
        this.keys = keys;
        this.core = new LockCore<>(options, Primitive.LOCK, keys, true);
        this.semaphoreCore = new LockCore<>(options, Primitive.SEMAPHORE, keys, true);
        this.readWriteCore = new LockCore<>(options, Primitive.READ_WRITE_LOCK, keys, true);
        this.multiCore = new LockCore<>(options, Primitive.MULTI_LOCK, keys, true);
        this.cores = List.of(core, semaphoreCore, readWriteCore, multiCore);
    }

    /** An in-memory client with the default options, on keys of its own. */
    public static InMemoryReactiveLock create() {
        return create(LockOptions.defaults());
    }

    /**
     * An in-memory client on keys of its own, with the given acquire timeout, renewal interval,
     * maximum lease time, bound on pending acquisitions, scheduler and listener.
     */
    public static InMemoryReactiveLock create(LockOptions options) {
        return new InMemoryReactiveLock(options, new Keyspace());
    }

    /**
     * Another client on the same keys as this one, with other options: as two clients of one Redis
     * (two processes, say), their primitives of one name see each other.
     */
    public InMemoryReactiveLock withOptions(LockOptions options) {
        return new InMemoryReactiveLock(options, keys);
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
    public <T> Flux<T> withLockMany(String name, Duration ttl, Function<? super LockLease, ? extends Publisher<T>> body) {
        return core.withLockMany(name, ttl, options.acquireTimeout(), body);
    }

    @Override
    public ReactiveLock withAcquireTimeout(Duration acquireTimeout) {
        return core.withAcquireTimeout(acquireTimeout);
    }

    /**
     * The fair lock: the same lock key as this lock. A release here always hands the lock to its
     * longest waiter, so this lock is served in arrival order already, and so is its fair view.
     */
    @Override
    public ReactiveLock fair() {
        return core.withAcquireTimeout(options.acquireTimeout());
    }

    /**
     * A semaphore of {@code capacity} permits per name; its permits are a key of their own, apart
     * from the lock of the name.
     *
     * @throws IllegalArgumentException if {@code capacity} is below 1
     */
    @Override
    public ReactiveSemaphore semaphore(int capacity) {
        return Primitives.semaphore(semaphoreCore, capacity, (a, cap, permits) -> new Keyspace.PermitsCall(a, cap, permits));
    }

    /** The read-write lock: its writer and readers are keys of their own, apart from the lock of the name. */
    @Override
    public ReactiveReadWriteLock readWriteLock() {
        return Primitives.readWriteLock(readWriteCore, Keyspace.ReadWriteCall::new);
    }

    /** The multi-lock: its names are this lock's, so a {@code withLocks} and a {@code withLock} on one name exclude each other. */
    @Override
    public ReactiveMultiLock multiLock() {
        return Primitives.multiLock(multiCore, Keyspace.MultiCall::new,
                (call, lease) -> ((Keyspace.MultiCall) call).fencingTokens);
    }

    /** The options every primitive of this client runs with. */
    public LockOptions options() {
        return options;
    }

    /** Bodies of this client's primitives running with their renewal watchdog now; zero once every one has ended. */
    public int activeLeases() {
        return cores.stream().mapToInt(LockCore::activeLeases).sum();
    }

    /**
     * Closes this client: acquisitions requested afterwards, of any primitive, fail with
     * {@link LockClosedException}; what is held stays until released. Other clients on the same keys
     * go on.
     */
    @Override
    public Mono<Void> closeAsync() {
        return Mono.fromRunnable(this::close);
    }

    /** {@link #closeAsync()} at once: there is nothing to wait for in memory. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            cores.forEach(LockCore::close);
        }
    }

    // ---- Test hooks: what is held, and holders that go away ----

    /** Whether anyone holds the lock {@code name} now (by a lock, a fair lock or a multi-lock). */
    public boolean isLocked(String name) {
        return keys.isLocked(name);
    }

    /** The names of the locks held now, sorted. */
    public Set<String> lockedNames() {
        return keys.lockedNames();
    }

    /** The permits of the semaphore {@code name} held now, of every capacity. */
    public int permitsHeld(String name) {
        return keys.permitsHeld(name);
    }

    /** How many readers hold the read-write lock {@code name} now. */
    public int readers(String name) {
        return keys.readers(name);
    }

    /** Whether a writer holds the read-write lock {@code name} now. */
    public boolean isWriteLocked(String name) {
        return keys.isWriteLocked(name);
    }

    /** How many writers wait for the read-write lock {@code name} now (while any does, new readers wait too). */
    public int writersWaiting(String name) {
        return keys.writersWaiting(name);
    }

    /** The names with anything held or waited for now, of every primitive, sorted. */
    public Set<String> names() {
        return keys.names();
    }

    /**
     * Ends the current lease of the lock {@code name} (a lock's, a fair lock's, or a multi-lock's
     * that holds it) as if its TTL had run out unnoticed (a holder paused past its lease): the lock
     * goes to the next waiter at once, and the holder's body fails with {@link LockLostException}
     * at its next renewal.
     *
     * @return whether the lock was held
     */
    public boolean expire(String name) {
        return keys.expireLock(name);
    }

    /**
     * Ends every lease on the permits of {@code name} as if their TTL had run out unnoticed: the
     * permits come back at once, and each holder's body fails with {@link LockLostException} at its
     * next renewal.
     *
     * @return whether any permits were held
     */
    public boolean expirePermits(String name) {
        return keys.expirePermits(name);
    }

    /**
     * Ends the writer's and every reader's lease on the read-write lock {@code name} as if their TTL
     * had run out unnoticed: the lock is free at once, and each holder's body fails with
     * {@link LockLostException} at its next renewal.
     *
     * @return whether anyone held it
     */
    public boolean expireReadWriteLock(String name) {
        return keys.expireReadWrite(name);
    }

    /**
     * Takes the lock {@code name} for a holder outside this process that never renews nor releases
     * it, as a crashed instance would, if it is free: it expires after {@code ttl} on the scheduler
     * (virtual time inside {@code StepVerifier.withVirtualTime}).
     *
     * @return whether the lock was free and is now held by the outside holder
     */
    public boolean lockElsewhere(String name, Duration ttl) {
        return elsewhere(name, ttl, Keyspace.LOCK);
    }

    /**
     * Takes {@code permits} of the permits of {@code name} for an outside holder that never renews
     * nor releases them, if they fit in {@code capacity}: they come back after {@code ttl} on the
     * scheduler.
     *
     * @return whether the permits were taken
     * @throws IllegalArgumentException if {@code permits} is not from 1 to {@code capacity}
     */
    public boolean holdElsewhere(String name, int capacity, int permits, Duration ttl) {
        if (permits < 1 || permits > capacity) {
            throw new IllegalArgumentException("permits must be from 1 to the capacity (" + capacity + "), got " + permits);
        }
        return elsewhere(name, ttl, Keyspace.permits(capacity, permits));
    }

    /**
     * Takes the read lock {@code name} for a reader outside this process that never renews nor
     * releases it, if a reader may enter now: its lease ends after {@code ttl} on the scheduler.
     *
     * @return whether the reader entered
     */
    public boolean readElsewhere(String name, Duration ttl) {
        return elsewhere(name, ttl, Keyspace.READ);
    }

    /**
     * Takes the write lock {@code name} for a writer outside this process that never renews nor
     * releases it, if it is free: its lease ends after {@code ttl} on the scheduler.
     *
     * @return whether the writer took it
     */
    public boolean writeElsewhere(String name, Duration ttl) {
        return elsewhere(name, ttl, Keyspace.WRITE);
    }

    private boolean elsewhere(String name, Duration ttl, Keyspace.TakeElsewhere take) {
        Arguments.checkName(name);
        Arguments.checkTtl(ttl, options);
        return keys.holdElsewhere(name, ttl, options.scheduler(), take);
    }

    @Override
    public String toString() {
        return "InMemoryReactiveLock{" + options + "}";
    }
}
