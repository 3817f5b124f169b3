package io.reactivelock.testing;

import io.reactivelock.LockAcquisitionException.Reason;
import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.spi.Lease;
import io.reactivelock.spi.LockStore;
import io.reactivelock.spi.Request;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * The keys of every primitive of one or more {@link InMemoryReactiveLock}s (those made by
 * {@code withOptions} share it, as clients of one Redis share its keys), and the one
 * {@link LockStore} of all of their cores.
 *
 * <p>Per name it keeps what Redis keeps under that name's keys (see the Redis client's
 * {@code LockKeys}): the <em>lock key</em> (its holder and fencing token), which the lock, the
 * fair lock and the multi-lock all take, so that they exclude each other; the <em>permits</em> of
 * the semaphore; and the <em>writer</em>, <em>readers</em> and <em>waiting writers</em> of the
 * read-write lock. The three are separate keys: a semaphore or a read-write lock of a name does not
 * exclude the lock of that name. Fencing tokens come from one counter, so each is above every
 * earlier one of its name.
 *
 * <p>Every change is one short {@code synchronized} section over plain collections, with nothing
 * that blocks inside; what a change sets off (a hand-off, wake-ups, cancelling an expiry timer) runs
 * after it, on the waiter's scheduler, as a Redis reply would arrive, never on the caller's stack
 * inside the section. A waiter never polls: a release hands the lock key to its longest waiter
 * (so the lock is served in arrival order), and wakes the waiters of permits and of the read-write
 * lock, which then try again.
 */
final class Keyspace implements LockStore<Keyspace.Call> {

    private final Map<String, Name> names = new HashMap<>();
    private long lastFencingToken;

    // ---- The acquisitions and the holders ----

    /** Whoever holds or waits for a key: an acquisition, or an outside holder that expires by its TTL. */
    static class Holder {
        /** The names whose keys this holder may be found in. */
        final List<String> names;
        private volatile @Nullable Disposable expiry;

        Holder(List<String> names) {
            this.names = names;
        }

        void stopExpiry() {
            Disposable d = expiry;
            if (d != null) {
                d.dispose();
            }
        }
    }

    /** One acquisition of one primitive, with how it takes, renews and is told lost. */
    abstract static class Call extends Holder {
        final Request request;

        Call(Request request, List<String> names) {
            super(names);
            this.request = request;
        }

        /** Inside the keyspace's monitor: a grant (or this call's grant, again), or a place among the waiters. */
        abstract Reply acquire(Keyspace keys);

        /** Inside the monitor: the name of a key this call should hold and does not, or null. */
        abstract @Nullable String lostName(Keyspace keys);

        /** What a lost lease of this call says after "because ". */
        String lostDetail(String name) {
            return "it expired or another holder took it";
        }
    }

    /** An acquisition of the lock key of one name: the lock, or its fair view. */
    static final class LockCall extends Call {
        LockCall(Request request) {
            super(request, List.of(request.name()));
        }

        @Override
        Reply acquire(Keyspace keys) {
            Name n = keys.name(request.name());
            if (n.lock == this) {
                return Reply.granted(n.lockFence, request.ttl().toNanos()); // handed over a while ago
            }
            if (n.lock == null) {
                keys.takeLock(n, this);
                return Reply.granted(n.lockFence, request.ttl().toNanos());
            }
            n.waitInLine(this);
            return Reply.busy();
        }

        @Override
        @Nullable String lostName(Keyspace keys) {
            return keys.name(request.name()).lock == this ? null : request.name();
        }
    }

    /** An acquisition of the lock keys of several names (sorted), all or none. */
    static final class MultiCall extends Call {
        /** The fencing token of each name, set once every name is held. */
        volatile Map<String, Long> fencingTokens = Map.of();

        MultiCall(Request request, List<String> names) {
            super(request, names);
        }

        @Override
        Reply acquire(Keyspace keys) {
            String busy = keys.firstBusy(this);
            if (busy == null) {
                return Reply.granted(keys.takeAll(this), request.ttl().toNanos());
            }
            keys.leaveLines(this);
            keys.name(busy).waitInLine(this);
            return Reply.refused(Reason.BUSY, "'" + busy + "' stayed busy", null);
        }

        @Override
        @Nullable String lostName(Keyspace keys) {
            for (String name : names) {
                if (keys.name(name).lock != this) {
                    return name;
                }
            }
            return null;
        }

        @Override
        String lostDetail(String name) {
            return "it expired or another holder took it, so the locks " + request.name() + " are lost";
        }
    }

    /** An acquisition of {@code permits} of a semaphore's {@code capacity}. */
    static final class PermitsCall extends Call {
        final int capacity;
        final int permits;

        PermitsCall(Request request, int capacity, int permits) {
            super(request, List.of(request.name()));
            this.capacity = capacity;
            this.permits = permits;
        }

        @Override
        Reply acquire(Keyspace keys) {
            Name n = keys.name(request.name());
            if (n.permits.containsKey(this) || n.takePermits(this, capacity, permits)) {
                return Reply.granted(LockLease.NO_FENCING_TOKEN, request.ttl().toNanos());
            }
            addOnce(n.permitWaiters, this);
            return Reply.busy();
        }

        @Override
        @Nullable String lostName(Keyspace keys) {
            return keys.name(request.name()).permits.containsKey(this) ? null : request.name();
        }

        @Override
        String lostDetail(String name) {
            return "its permits expired";
        }
    }

    /** An acquisition of the read-write lock, as its writer or as one of its readers. */
    static final class ReadWriteCall extends Call {
        final boolean write;

        ReadWriteCall(Request request, boolean write) {
            super(request, List.of(request.name()));
            this.write = write;
        }

        @Override
        Reply acquire(Keyspace keys) {
            Name n = keys.name(request.name());
            if (n.writer == this) {
                return Reply.granted(n.writerFence, request.ttl().toNanos());
            }
            if (n.readers.contains(this) || (!write && n.read(this))) {
                return Reply.granted(LockLease.NO_FENCING_TOKEN, request.ttl().toNanos());
            }
            if (write && n.write(this, keys)) {
                return Reply.granted(n.writerFence, request.ttl().toNanos());
            }
            addOnce(write ? n.writersWaiting : n.readersWaiting, this);
            return Reply.busy();
        }

        @Override
        @Nullable String lostName(Keyspace keys) {
            Name n = keys.name(request.name());
            return n.writer == this || n.readers.contains(this) ? null : request.name();
        }

        @Override
        String lostDetail(String name) {
            return (write ? "its write lease" : "its read lease") + " expired or was taken";
        }
    }

    /** The keys of one name. */
    static final class Name {
        /** The lock key: held by a lock, a fair lock or a multi-lock acquisition, or by an outside holder. */
        @Nullable Holder lock;
        long lockFence;
        /** Who waits for the lock key, in arrival order; never anyone while the key is free. */
        final List<Call> line = new ArrayList<>();
        /** The semaphore's holders, with their permits. */
        final Map<Holder, Integer> permits = new LinkedHashMap<>();
        final List<Call> permitWaiters = new ArrayList<>();
        /** The read-write lock's writer, its fencing token, its readers and who waits. */
        @Nullable Holder writer;
        long writerFence;
        final List<Holder> readers = new ArrayList<>();
        final List<Call> writersWaiting = new ArrayList<>();
        final List<Call> readersWaiting = new ArrayList<>();

        void waitInLine(Call call) {
            addOnce(line, call);
        }

        boolean takePermits(Holder holder, int capacity, int n) {
            int used = permits.values().stream().mapToInt(Integer::intValue).sum();
            if (used + n > capacity) {
                return false;
            }
            permits.put(holder, n);
            permitWaiters.remove(holder);
            return true;
        }

        /** A writer enters an empty lock, with the next fencing token of {@code keys}. */
        boolean write(Holder holder, Keyspace keys) {
            if (writer != null || !readers.isEmpty()) {
                return false;
            }
            writer = holder;
            writerFence = ++keys.lastFencingToken;
            writersWaiting.remove(holder);
            return true;
        }

        /** A reader enters while no writer holds the lock or waits for it. */
        boolean read(Holder holder) {
            if (writer != null || !writersWaiting.isEmpty()) {
                return false;
            }
            readers.add(holder);
            readersWaiting.remove(holder);
            return true;
        }

        boolean isEmpty() {
            return lock == null && line.isEmpty() && permits.isEmpty() && permitWaiters.isEmpty() && writer == null
                    && readers.isEmpty() && writersWaiting.isEmpty() && readersWaiting.isEmpty();
        }
    }

    private static <T> void addOnce(List<T> list, T item) {
        if (!list.contains(item)) {
            list.add(item);
        }
    }

    // ---- Inside the monitor ----

    private Name name(String name) {
        return names.computeIfAbsent(name, n -> new Name());
    }

    private void takeLock(Name n, Holder holder) {
        n.lock = holder;
        n.lockFence = ++lastFencingToken;
    }

    /** The first of {@code call}'s names whose lock key someone else holds, or null. */
    private @Nullable String firstBusy(MultiCall call) {
        for (String name : call.names) {
            Holder h = name(name).lock;
            if (h != null && h != call) {
                return name;
            }
        }
        return null;
    }

    /** Takes every lock key of {@code call} (or keeps them, if it has them); returns the first name's token. */
    private long takeAll(MultiCall call) {
        leaveLines(call);
        Map<String, Long> tokens = new HashMap<>(call.fencingTokens);
        for (String name : call.names) {
            Name n = name(name);
            if (n.lock != call) {
                takeLock(n, call);
                tokens.put(name, n.lockFence);
            }
        }
        call.fencingTokens = Map.copyOf(tokens);
        return call.fencingTokens.get(call.names.get(0));
    }

    private void leaveLines(Call call) {
        for (String name : call.names) {
            name(name).line.remove(call);
        }
    }

    /**
     * Frees the lock key of {@code n} and hands it to the longest waiter that can take it now: a
     * lock acquisition at once, a multi-lock one if its other names are free too (else it moves to
     * the line of the name that is busy, and the next waiter is tried). Returns what to run after.
     */
    private void freeLock(Name n, List<Runnable> after) {
        n.lock = null;
        for (Call w : List.copyOf(n.line)) {
            if (w instanceof MultiCall multi) {
                String busy = firstBusy(multi);
                if (busy != null) {
                    n.line.remove(multi);
                    name(busy).waitInLine(multi);
                    continue;
                }
                long fence = takeAll(multi);
                after.add(handOver(w, fence));
                return;
            }
            n.line.remove(w);
            takeLock(n, w);
            after.add(handOver(w, n.lockFence));
            return;
        }
    }

    private static Runnable handOver(Call to, long fence) {
        long sentAt = System.nanoTime();
        // On the waiter's scheduler, as a Redis reply would arrive: its body must not run on the releaser's stack.
        return () -> to.request.timers().schedule(() -> to.request.waiter().handOver(fence, sentAt));
    }

    private static void wakeAll(List<Call> waiters, List<Runnable> after) {
        for (Call w : List.copyOf(waiters)) {
            after.add(() -> w.request.timers().schedule(w.request.waiter()::wake));
        }
    }

    /** {@link #leave(Holder, List, List)} of every name of {@code holder}. */
    private boolean leave(Holder holder, List<Runnable> after) {
        return leave(holder, holder.names, after);
    }

    /**
     * Takes {@code holder} out of every key of {@code these} names, and what it freed goes to the waiters:
     * the lock key to the longest waiter; permits, and a read-write lock (or a writer's place in
     * front of the readers), by waking their waiters. Returns whether it held a lock key it handed on.
     */
    private boolean leave(Holder holder, List<String> these, List<Runnable> after) {
        boolean handed = false;
        for (String name : these) {
            Name n = names.get(name);
            if (n == null) {
                continue;
            }
            n.line.remove(holder);
            if (n.lock == holder) {
                freeLock(n, after);
                handed |= n.lock != null;
            }
            n.permitWaiters.remove(holder);
            if (n.permits.remove(holder) != null) {
                wakeAll(n.permitWaiters, after);
            }
            n.readersWaiting.remove(holder);
            boolean freed = n.writersWaiting.remove(holder) | n.readers.remove(holder);
            if (n.writer == holder) {
                n.writer = null;
                freed = true;
            }
            if (freed) {
                wakeAll(n.writersWaiting, after);
                wakeAll(n.readersWaiting, after);
            }
            forgetIfEmpty(name, n);
        }
        holder.stopExpiry();
        return handed;
    }

    /** Forgets the names of {@code list} that have nothing left, as Redis drops empty keys. */
    private void tidy(List<String> list) {
        for (String name : list) {
            Name n = names.get(name);
            if (n != null) {
                forgetIfEmpty(name, n);
            }
        }
    }

    private void forgetIfEmpty(String name, Name n) {
        if (n.isEmpty()) {
            names.remove(name);
        }
    }

    private static void run(List<Runnable> after) {
        after.forEach(Runnable::run);
    }

    // ---- The store ----

    @Override
    public Call open(Request request) {
        return new LockCall(request);
    }

    @Override
    public CompletionStage<Reply> acquire(Call call, int attempt) {
        Reply reply;
        synchronized (this) {
            reply = call.acquire(this);
            tidy(call.names);
        }
        return CompletableFuture.completedFuture(reply);
    }

    @Override
    public Mono<Void> renew(Call call, Lease lease) {
        return Mono.defer(() -> {
            String lost;
            synchronized (this) {
                lost = call.lostName(this);
                if (lost == null) {
                    lease.extendTo(System.nanoTime() + call.request.ttl().toNanos());
                }
                tidy(call.names);
            }
            return lost == null ? Mono.empty() : Mono.error(new LockLostException(lost, call.lostDetail(lost), null));
        });
    }

    @Override
    public Mono<Boolean> release(Call call) {
        return Mono.fromCallable(() -> {
            List<Runnable> after = new ArrayList<>();
            boolean handed;
            synchronized (this) {
                handed = leave(call, after);
            }
            run(after);
            return handed;
        });
    }

    @Override
    public CompletionStage<?> releaseAbandoned(Call call) {
        List<Runnable> after = new ArrayList<>();
        synchronized (this) {
            leave(call, after);
        }
        run(after);
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public boolean isTransient(Throwable error) {
        return false;
    }

    /** A waiter is handed the lock key, or woken by a release of the permits or the read-write lock: it never polls. */
    @Override
    public @Nullable Duration pause(Call call, int attempts) {
        return attempts == 0 ? Duration.ZERO : null;
    }

    @Override
    public String toString() {
        return "InMemoryReactiveLock";
    }

    // ---- Test hooks ----

    /** Ends the lock key's holding of {@code name}; returns whether it was held. */
    boolean expireLock(String name) {
        return expire(name, n -> n.lock != null ? List.of(n.lock) : List.of());
    }

    /** Ends every permit holding of {@code name}; returns whether any was held. */
    boolean expirePermits(String name) {
        return expire(name, n -> List.copyOf(n.permits.keySet()));
    }

    /** Ends the writer's and every reader's holding of {@code name}; returns whether any was held. */
    boolean expireReadWrite(String name) {
        return expire(name, n -> {
            List<Holder> holders = new ArrayList<>(n.readers);
            if (n.writer != null) {
                holders.add(n.writer);
            }
            return holders;
        });
    }

    private boolean expire(String name, Function<Name, List<Holder>> holders) {
        List<Runnable> after = new ArrayList<>();
        List<Holder> ended;
        synchronized (this) {
            Name n = names.get(name);
            ended = n == null ? List.of() : holders.apply(n);
            ended.forEach(h -> leave(h, List.of(name), after));
        }
        run(after);
        return !ended.isEmpty();
    }

    /**
     * Takes a key of {@code name} for an outside holder that never renews nor releases it, if
     * {@code take} lets it in, and ends the holding after {@code ttl} on {@code scheduler}.
     */
    boolean holdElsewhere(String name, Duration ttl, Scheduler scheduler, TakeElsewhere take) {
        Holder outsider = new Holder(List.of(name));
        boolean taken;
        synchronized (this) {
            Name n = name(name);
            taken = take.take(this, n, outsider);
            forgetIfEmpty(name, n);
        }
        if (taken) {
            outsider.expiry = scheduler.schedule(() -> {
                List<Runnable> after = new ArrayList<>();
                synchronized (this) {
                    leave(outsider, after);
                }
                run(after);
            }, ttl.toNanos(), TimeUnit.NANOSECONDS);
        }
        return taken;
    }

    /** How an outside holder enters a key, inside the monitor. */
    @FunctionalInterface
    interface TakeElsewhere {
        boolean take(Keyspace keys, Name n, Holder outsider);
    }

    static final TakeElsewhere LOCK = (keys, n, outsider) -> {
        if (n.lock != null) {
            return false;
        }
        keys.takeLock(n, outsider);
        return true;
    };

    static TakeElsewhere permits(int capacity, int permits) {
        return (keys, n, outsider) -> n.takePermits(outsider, capacity, permits);
    }

    static final TakeElsewhere READ = (keys, n, outsider) -> n.read(outsider);

    static final TakeElsewhere WRITE = (keys, n, outsider) -> n.write(outsider, keys);

    synchronized boolean isLocked(String name) {
        Name n = names.get(name);
        return n != null && n.lock != null;
    }

    synchronized Set<String> lockedNames() {
        return namesWhere(n -> n.lock != null);
    }

    synchronized int permitsHeld(String name) {
        Name n = names.get(name);
        return n == null ? 0 : n.permits.values().stream().mapToInt(Integer::intValue).sum();
    }

    synchronized int readers(String name) {
        Name n = names.get(name);
        return n == null ? 0 : n.readers.size();
    }

    synchronized boolean isWriteLocked(String name) {
        Name n = names.get(name);
        return n != null && n.writer != null;
    }

    synchronized int writersWaiting(String name) {
        Name n = names.get(name);
        return n == null ? 0 : n.writersWaiting.size();
    }

    /** The names with anything held or waited for. */
    synchronized Set<String> names() {
        return namesWhere(n -> !n.isEmpty());
    }

    private Set<String> namesWhere(Predicate<Name> test) {
        Set<String> found = new TreeSet<>();
        names.forEach((name, n) -> {
            if (test.test(n)) {
                found.add(name);
            }
        });
        return found;
    }
}
