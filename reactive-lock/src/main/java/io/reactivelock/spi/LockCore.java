package io.reactivelock.spi;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockAcquisitionException.Reason;
import io.reactivelock.LockClosedException;
import io.reactivelock.LockLease;
import io.reactivelock.LockListener;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.Primitive;
import io.reactivelock.ReactiveLock;
import io.reactivelock.TooManyPendingAcquisitionsException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.scheduler.Scheduler;
import reactor.util.Logger;
import reactor.util.Loggers;
import reactor.util.context.Context;

/**
 * The life of every acquisition, for every lock of the library: one place for the token, the
 * state machine, admission, the acquire timeout, the listener calls, the {@code usingWhen}
 * wiring, the body and its renewal watchdog, release-once, the release of late grants and the
 * background release of whatever an abandoned acquisition may hold.
 *
 * <h2>How a new store is written</h2>
 * A lock is a {@link LockStore} plus a {@code LockCore} built over it; its public class checks
 * its own arguments and delegates {@code withLock} to {@link #withLock}. The engine asks, the
 * store answers: the store opens its per-call state {@code C} from a {@link Request} (name,
 * token, TTL, whether a fencing token is needed, timers, a {@link Waiter}), and then answers five
 * questions for it: <em>acquire</em> attempt number <em>n</em> (granted with a fencing token and
 * a validity, refused and why, or a store error), <em>renew</em>, <em>release</em> (the holder's, which may
 * hand the lock over), <em>release what an abandoned acquisition may hold</em> (idempotent), and
 * <em>how long to pause</em> before the next attempt. A store that can wake a waiter early (a
 * release notice, a direct grant) does it through the request's {@link Waiter}, a handle of six
 * methods; it never sees the acquisition itself. Everything else (timeouts, retries,
 * cancellation, listener events, renewal scheduling, background releases) is here, so a store of
 * about 150 lines inherits every guarantee of the {@link ReactiveLock} contract.
 *
 * <h2>One acquisition</h2>
 * ACQUIRING moves once to HELD (the body may run) or to DONE (the subscription ended first);
 * HELD moves to DONE when the holder releases. Cancel safety does not rely on cancellation
 * reaching an in-flight command: {@code finish()} releases whatever an acquisition
 * that sent any attempt may hold, and a reply or error that arrives after DONE is released again, so a
 * grant or a place in a line can never outlive the subscription. The attempts form a loop of
 * <em>turns</em> (an attempt, then a pause); whoever ends a turn (its reply, its alarm, a wake-up)
 * claims it by compare-and-set, so each turn ends once. One timer per acquisition is armed at a
 * time: the end of the current turn or the acquire deadline, whichever comes first.
 *
 * @param <C> the store's state of one acquisition
 */
public final class LockCore<C> {

    private static final Logger log = Loggers.getLogger(LockCore.class);

    private static final int ACQUIRING = 0;
    private static final int HELD = 1;
    private static final int DONE = 2;

    private final LockStore<C> store;
    private final LockOptions options;
    private final LockListener listener;
    private final Backoff backoff;
    private final Timers timers;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Acquisitions still ACQUIRING; bounded by {@link LockOptions#maxPendingAcquisitions()}. */
    private final AtomicInteger pending = new AtomicInteger();
    private final AtomicInteger activeLeases = new AtomicInteger();
    private final ConcurrentHashMap<String, BackgroundReleases> releasing = new ConcurrentHashMap<>();
    private final AtomicInteger releaseRetryTimers = new AtomicInteger();
    /**
     * Every acquisition with something under way: from its subscription until it has ended and
     * its last command (an attempt, a release) has been answered. What {@link #close()} cancels
     * and {@link #released()} waits for. An acquisition counts what it has under way itself
     * ({@link Acquisition#workStarted()}); this map changes only when that count leaves or reaches zero.
     */
    private final ConcurrentHashMap<Acquisition, Boolean> live = new ConcurrentHashMap<>();
    /** Completed once the lock is closed and nothing is {@link #live}. */
    private final CompletableFuture<Void> drained = new CompletableFuture<>();
    /** Set once {@link #released()} stopped waiting: background releases are no longer retried. */
    private volatile boolean gaveUp;
    private final boolean durationsOnSchedulerClock;

    /** A core for a lock of kind {@code primitive}, whose listener hears it as that kind. */
    public LockCore(LockOptions options, Primitive primitive, LockStore<C> store) {
        this(options, primitive, store, false);
    }

    /**
     * A core whose listener durations are measured on the scheduler's clock when
     * {@code durationsOnSchedulerClock} (so that they follow virtual time: for a store that lives
     * in memory, on that clock), else on {@link System#nanoTime()}.
     */
    public LockCore(LockOptions options, Primitive primitive, LockStore<C> store, boolean durationsOnSchedulerClock) {
        this.options = Objects.requireNonNull(options, "options");
        this.store = store;
        this.durationsOnSchedulerClock = durationsOnSchedulerClock;
        this.listener = SafeLockListener.of(options.listener().forPrimitive(primitive));
        this.backoff = new Backoff(options.minBackoff(), options.maxBackoff(), options.jitter());
        this.timers = new Timers(options::scheduler);
        Tokens.seed(); // the first token must not read the OS entropy source on a reactive thread
    }

    /** The options this core runs with. */
    public LockOptions options() {
        return options;
    }

    /** The listener, guarded so that its exceptions never reach the lock. */
    public LockListener listener() {
        return listener;
    }

    /** The backoff steps of the options, for the stores' pauses. */
    public Backoff backoff() {
        return backoff;
    }

    /** The scheduler for this lock's timers and its clock: the options' scheduler, through a {@link Timers} queue. */
    public Scheduler timers() {
        return timers;
    }

    /** Bodies running with their renewal watchdog now. */
    public int activeLeases() {
        return activeLeases.get();
    }

    /** Lock names with releases retried in the background now. */
    public int namesReleasingInBackground() {
        return releasing.size();
    }

    /** Timers armed now to retry background releases: at most one per name in {@link #namesReleasingInBackground()}. */
    public int releaseRetryTimers() {
        return releaseRetryTimers.get();
    }

    /** Delayed tasks of this lock waiting now (timeouts, renewals, lingers, retries); see {@link Timers#pending()}. For tests. */
    public int pendingTimers() {
        return timers.pending();
    }

    /**
     * Closes the lock; returns whether it was open. Acquisitions requested from now on fail with
     * {@link LockClosedException}, and so do those still waiting for the lock; bodies running are
     * cancelled, and their subscribers get a {@link LockLostException}. Whatever each of them holds
     * or may yet be granted (a reply still on its way) is released by token, in the background:
     * {@link #released()} says when that is done, and the store's connections must stay open until then.
     */
    public boolean close() {
        if (!closed.compareAndSet(false, true)) {
            return false;
        }
        live.keySet().forEach(Acquisition::closeNow);
        if (live.isEmpty()) {
            drained.complete(null);
        }
        return true;
    }

    /**
     * After {@link #close()}: completes once every acquisition has ended and its last command (an
     * attempt, a release) has been answered, or after {@link LockOptions#closeTimeout()}; then
     * logs at WARN the names whose release was not answered, which stay until their TTL. Never fails.
     */
    public Mono<Void> released() {
        Duration timeout = options.closeTimeout();
        return Mono.fromFuture(drained, true).timeout(timeout, Mono.fromRunnable(() -> {
            gaveUp = true;
            List<String> names = live.keySet().stream().map(a -> a.name).distinct().sorted().toList();
            if (!names.isEmpty()) {
                log.warn("Closed with {} lock name(s) whose release was not answered within {} ms; they stay until "
                        + "their TTL: {}", names.size(), timeout.toMillis(), names.size() <= MAX_NAMES_LOGGED ? names
                        : names.subList(0, MAX_NAMES_LOGGED) + " and " + (names.size() - MAX_NAMES_LOGGED) + " more");
            }
        }), timers);
    }

    /**
     * {@code locked}, a {@code withLock} of a lock built on a core, marked so that {@link #close()}
     * does not cancel its body but waits for it to end by itself (at most the close timeout). For an
     * integration whose body only holds the lock on for a minimum time after the work, which must
     * outlive the instance's shutdown (the Spring Boot starter's {@code lockAtLeastFor}); a body that
     * does work is cancelled by close, as the {@link ReactiveLock} contract says.
     */
    public static <T> Mono<T> runningThroughClose(Mono<T> locked) {
        return locked.contextWrite(Context.of(RUNS_THROUGH_CLOSE, Boolean.TRUE));
    }

    /** Context key of {@link #runningThroughClose}: an object of its own, so that nothing else can set it. */
    private static final Object RUNS_THROUGH_CLOSE = new Object();

    /** The most names one WARN of {@link #released()} lists. */
    private static final int MAX_NAMES_LOGGED = 100;

    /** {@code withLock} with the options' acquire timeout. */
    public <T> Mono<T> withLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
        return withLock(name, ttl, options.acquireTimeout(), body);
    }

    /** {@code withLock} waiting at most {@code acquireTimeout} for the lock. */
    public <T> Mono<T> withLock(String name, Duration ttl, Duration acquireTimeout,
            Function<? super LockLease, ? extends Mono<T>> body) {
        return withLock(name, ttl, acquireTimeout, store::open, body);
    }

    /**
     * {@code withLock} of a body that does not see the lease: the store is told that no fencing
     * token is needed ({@link Request#fencing()}), which may spare it the work of issuing one.
     */
    public <T> Mono<T> withLock(String name, Duration ttl, Duration acquireTimeout, Mono<T> body) {
        Objects.requireNonNull(body, "body");
        return withLock(name, ttl, acquireTimeout, false, store::open, lease -> body);
    }

    /**
     * {@code withLock} whose acquisition state is made by {@code open} instead of
     * {@link LockStore#open}: for a store whose calls carry more than a name and a TTL (the
     * permits of a semaphore, the mode of a read-write lock).
     */
    public <T> Mono<T> withLock(String name, Duration ttl, Duration acquireTimeout,
            Function<? super Request, ? extends C> open, Function<? super LockLease, ? extends Mono<T>> body) {
        return withLock(name, ttl, acquireTimeout, true, open, body);
    }

    private <T> Mono<T> withLock(String name, Duration ttl, Duration acquireTimeout, boolean fencing,
            Function<? super Request, ? extends C> open, Function<? super LockLease, ? extends Mono<T>> body) {
        check(name, ttl, acquireTimeout, body);
        return Mono.defer(() -> {
            LockAcquisitionException refused = admit(name);
            if (refused != null) {
                listener.acquireFailed(name, refused, Duration.ZERO);
                return Mono.error(refused);
            }
            Acquisition a = new Acquisition(name, ttl, acquireTimeout, fencing, open);
            a.workStarted();
            return Mono.usingWhen(a.acquire(), lease -> a.run(lease, body),
                            a::complete, (lease, error) -> a.release(error), lease -> a.release(null))
                    .onErrorMap(LockCore::isWrappedLoss, Throwable::getCause)
                    .doFinally(signal -> a.finish());
        });
    }

    /**
     * {@code withLockMany}: as {@link #withLock(String, Duration, Duration, Function, Function)},
     * for a body whose publisher emits any number of values, passed on as they come; the lock is
     * held until it terminates or the subscriber cancels.
     */
    public <T> Flux<T> withLockMany(String name, Duration ttl, Duration acquireTimeout,
            Function<? super LockLease, ? extends Publisher<T>> body) {
        check(name, ttl, acquireTimeout, body);
        return Flux.defer(() -> {
            LockAcquisitionException refused = admit(name);
            if (refused != null) {
                listener.acquireFailed(name, refused, Duration.ZERO);
                return Flux.error(refused);
            }
            Acquisition a = new Acquisition(name, ttl, acquireTimeout, true, store::open);
            a.workStarted();
            return Flux.usingWhen(a.acquire(), lease -> a.runMany(lease, body),
                            a::complete, (lease, error) -> a.release(error), lease -> a.release(null))
                    .onErrorMap(LockCore::isWrappedLoss, Throwable::getCause)
                    .doFinally(signal -> a.finish());
        });
    }

    private void check(String name, Duration ttl, Duration acquireTimeout, Object body) {
        Arguments.checkCall(name, ttl, body, options, listener, () -> {
            Arguments.checkAcquireTimeout(acquireTimeout);
            store.checkTtl(ttl);
        });
    }

    /** usingWhen wraps a failed completion step; the caller gets the loss it stands for. */
    private static boolean isWrappedLoss(Throwable e) {
        return e.getClass() == RuntimeException.class && e.getCause() instanceof LockLostException;
    }

    /** The real error inside the wrappers of {@link java.util.concurrent.CompletionStage} composition. */
    public static Throwable unwrap(Throwable error) {
        Throwable e = error;
        while (e instanceof java.util.concurrent.CompletionException && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    /**
     * The error of a command whose reply did not come within {@code timeout}. Without a stack
     * trace: it is made on a timer's thread, whose stack says nothing of the command, and an
     * overloaded server times out many waiters at once, each keeping its last error (a trace
     * took about 600 bytes of heap per waiter, a quarter of a waiter's cost, in the bench's scale
     * cell).
     */
    public static TimeoutException noReplyWithin(Duration timeout) {
        return new NoReply("no reply within " + timeout.toMillis() + " ms");
    }

    private static final class NoReply extends TimeoutException {
        private static final long serialVersionUID = 1L;

        NoReply(String message) {
            super(message);
        }

        @Override
        public Throwable fillInStackTrace() {
            return this;
        }

        /** As a plain {@link TimeoutException} reads, in the messages that quote it. */
        @Override
        public String toString() {
            return TimeoutException.class.getName() + ": " + getMessage();
        }
    }

    /** A view whose {@code withLock} waits at most {@code acquireTimeout}; everything else is this core's. */
    public ReactiveLock withAcquireTimeout(Duration acquireTimeout) {
        Arguments.checkAcquireTimeout(acquireTimeout);
        return new View(acquireTimeout);
    }

    private @Nullable LockAcquisitionException admit(String name) {
        if (closed.get()) {
            return new LockClosedException(name);
        }
        if (pending.incrementAndGet() > options.maxPendingAcquisitions()) {
            pending.decrementAndGet();
            return new TooManyPendingAcquisitionsException(name, options.maxPendingAcquisitions());
        }
        return null; // the slot is given back when the acquisition leaves ACQUIRING
    }

    /** A lock that is this core with another acquire timeout. */
    private final class View implements ReactiveLock {
        private final Duration acquireTimeout;

        View(Duration acquireTimeout) {
            this.acquireTimeout = acquireTimeout;
        }

        @Override
        public <T> Mono<T> withLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
            return LockCore.this.withLock(name, ttl, acquireTimeout, body);
        }

        @Override
        public <T> Mono<T> withLock(String name, Duration ttl, Mono<T> body) {
            return LockCore.this.withLock(name, ttl, acquireTimeout, body);
        }

        @Override
        public <T> Flux<T> withLockMany(String name, Duration ttl, Function<? super LockLease, ? extends Publisher<T>> body) {
            return LockCore.this.withLockMany(name, ttl, acquireTimeout, body);
        }

        @Override
        public ReactiveLock withAcquireTimeout(Duration timeout) {
            return LockCore.this.withAcquireTimeout(timeout);
        }

        @Override
        public String toString() {
            return store + "{acquireTimeout=" + acquireTimeout + "}";
        }
    }

    /**
     * One subscription of {@code withLock}: one token, its attempts, its lease, and who releases.
     * Its store sees it only as the {@link Waiter} of the {@link Request} it was opened with.
     */
    private final class Acquisition implements Waiter {
        private final String name;
        private final String token = store.newToken();
        private final long ttlNanos;
        private final Duration acquireTimeout;
        private final Scheduler scheduler = timers;
        private final long startNanos = clock();
        private final long startOnScheduler = scheduler.now(TimeUnit.NANOSECONDS);
        private final C call;
        private final AtomicInteger state = new AtomicInteger(ACQUIRING);
        /** Set once the acquisition succeeded or failed (a cancel sets nothing). */
        private final AtomicBoolean settled = new AtomicBoolean();
        /** Numbers the attempts and pauses; whoever moves it on ends the current one. */
        private final AtomicLong turn = new AtomicLong();
        private final AtomicBoolean woken = new AtomicBoolean();
        private final AtomicInteger attempts = new AtomicInteger();
        private volatile long pausedTurn = -1;
        private volatile @Nullable Disposable alarm;
        private volatile @Nullable MonoSink<Lease> sink;
        private volatile @Nullable Lease handed;
        /**
         * A holder of this process has sent (or is sending) this acquisition a hand-off: its end
         * then releases ({@link #finish}), even with no attempt of its own, as a newcomer that queued
         * for a hand-off before its first attempt has none. Not covered by {@link #handOver}'s own
         * check: a hand-off that arrives just before the end, is not yet taken by an attempt and
         * finds the acquisition still waiting is released only here.
         */
        private volatile boolean mayBeHanded;
        private volatile LockStore.@Nullable Reply lastRefusal;
        private volatile @Nullable Throwable lastError;
        private volatile @Nullable Throwable lastRenewError;
        private volatile long heldSinceNanos;
        private volatile long releaseByNanos;
        /** Things under way (its subscription, commands not yet answered); see {@link #live}. */
        private final AtomicInteger work = new AtomicInteger();
        /** What fails the body when the lock is closed while it runs; set while it runs. */
        private final AtomicReference<@Nullable MonoSink<?>> cut = new AtomicReference<>();

        Acquisition(String name, Duration ttl, Duration acquireTimeout, boolean fencing,
                Function<? super Request, ? extends C> open) {
            this.name = name;
            this.ttlNanos = ttl.toNanos();
            this.acquireTimeout = acquireTimeout;
            this.call = open.apply(new Request(name, token, ttl, fencing, timers, this));
        }

        private Duration ttl() {
            return Duration.ofNanos(ttlNanos);
        }

        private boolean isDone() {
            return state.get() == DONE;
        }

        @Override
        public boolean hasEnded() {
            return isDone();
        }

        @Override
        public void wake() {
            woken.set(true);
            wakeIfPaused();
        }

        @Override
        public boolean wakeIfPaused() {
            long t = pausedTurn;
            if (turn.get() == t && turn.compareAndSet(t, t + 1)) {
                woken.set(false);
                dispose(alarm);
                attempt();
                return true;
            }
            return false;
        }

        @Override
        public void expectHandOff() {
            mayBeHanded = true;
        }

        @Override
        public void handOver(long fencingToken, long sentAtNanos) {
            handed = new Lease(name, token, fencingToken, sentAtNanos + ttlNanos);
            if (isDone()) {
                releaseInBackground("a hand-off that arrived after the acquisition ended");
            } else {
                wake();
            }
        }

        @Override
        public void handOffUnknown() {
            if (isDone()) {
                releaseInBackground("a hand-off whose outcome is unknown");
            } else {
                wake();
            }
        }

        /** One more thing under way for this acquisition (its subscription, a command); it is {@link #live} while any is. */
        void workStarted() {
            if (work.getAndIncrement() == 0) {
                live.put(this, Boolean.TRUE);
            }
        }

        /** One thing under way ended; once none is left, the lock may be {@link #drained}. */
        void workEnded() {
            if (work.decrementAndGet() != 0) {
                return;
            }
            // Read again under the map's lock of this key: a late hand-off may have started work again since.
            live.computeIfPresent(this, (a, present) -> a.work.get() == 0 ? null : present);
            if (closed.get() && live.isEmpty()) {
                drained.complete(null);
            }
        }

        /** The lock was closed: an acquisition still waiting fails, a body running is cancelled. */
        void closeNow() {
            if (sink != null && state.get() == ACQUIRING) {
                failClosed();
            }
            MonoSink<?> body = cut.getAndSet(null);
            if (body != null) {
                body.error(new LockLostException(name,
                        "the client was closed while the body held it; the body was cancelled and the lock released", null));
            }
        }

        private void failClosed() {
            if (settled.compareAndSet(false, true)) {
                LockClosedException closedNow = new LockClosedException(name);
                listener.acquireFailed(name, closedNow, Duration.ofNanos(clock() - startNanos));
                Objects.requireNonNull(sink).error(closedNow);
            }
        }

        /** Never emits; fails the body when the lock is closed while it runs ({@link #closeNow()}). */
        private <T> Mono<T> cutOnClose() {
            return Mono.create(s -> {
                if (s.contextView().hasKey(RUNS_THROUGH_CLOSE)) {
                    return;
                }
                cut.set(s);
                s.onCancel(() -> cut.compareAndSet(s, null));
                if (closed.get()) {
                    closeNow();
                }
            });
        }

        Mono<Lease> acquire() {
            return Mono.create(s -> {
                sink = s;
                s.onDispose(this::stopTimers);
                if (closed.get()) {
                    failClosed(); // closed since it was admitted; close() may not have seen this sink
                    return;
                }
                Duration first = store.pause(call, 0);
                if (first != null && first.isZero()) {
                    attempt();
                } else {
                    pause(first);
                }
            });
        }

        private void attempt() {
            long t = turn.incrementAndGet();
            Lease h = handed;
            if (h != null && h.validUntilNanos() - System.nanoTime() > ttlNanos - options.renewalIntervalFor(ttl()).toNanos()) {
                succeed(h); // if the subscription ended meanwhile, finish() releases: a hand-off was expected
                return;
            }
            // Counted before the state is read: a finish() that runs meanwhile then sees it and releases.
            int attempt = attempts.incrementAndGet();
            if (state.get() != ACQUIRING) {
                return;
            }
            // Not handed over, or too long ago for the first renewal to come in time: an ordinary
            // attempt, which with this token takes back a lock handed to it.
            long sentAt = System.nanoTime();
            CompletableFuture<LockStore.Reply> reply;
            workStarted(); // until the reply is handled: a grant it brings after close() is released first
            try {
                reply = store.acquire(call, attempt).toCompletableFuture();
            } catch (RuntimeException e) {
                reply = CompletableFuture.failedFuture(e);
            }
            if (!reply.isDone()) {
                Duration timeout = store.replyTimeout(options.commandTimeout());
                arm(t, timeout, () -> ended(t, sentAt, null,
                        noReplyWithin(Objects.requireNonNull(timeout))));
            }
            reply.whenComplete((r, e) -> {
                try {
                    if (isDone()) {
                        // A grant, or a place in a line, taken for a subscription that has ended; or an
                        // error whose command may have taken some of it (a multi-lock's groups).
                        releaseInBackground("a reply that arrived after the acquisition ended");
                    }
                    ended(t, sentAt, r, e);
                } finally {
                    workEnded();
                }
            });
        }

        /** The attempt of turn {@code t} ended with {@code reply} or {@code error}, if the turn is still open. */
        private void ended(long t, long sentAt, LockStore.@Nullable Reply reply, @Nullable Throwable error) {
            if (!turn.compareAndSet(t, t + 1)) {
                return;
            }
            dispose(alarm);
            if (reply != null && reply.isGranted()) {
                long validUntil = sentAt + reply.validForNanos();
                if (validUntil - System.nanoTime() > 0) {
                    succeed(new Lease(name, token, reply.fencingToken(), validUntil));
                    return;
                }
                // Not released here: the next attempt, with this token, takes the lock back, and finish()
                // releases it if the acquisition gives up. A release sent now could overtake that next
                // attempt's grant and delete the lock under the body (found by the nemesis run).
                reply = LockStore.Reply.refused(Reason.REDIS_UNAVAILABLE, "the grant came after the "
                        + Duration.ofNanos(reply.validForNanos()).toMillis() + " ms of validity had passed", null);
            }
            if (reply != null) {
                lastRefusal = reply;
                lastError = null;
            } else {
                Throwable e = unwrap(Objects.requireNonNull(error));
                lastRefusal = null;
                lastError = e;
                if (!store.isTransient(e)) {
                    fail(Reason.REDIS_ERROR, "of " + e, e);
                    return;
                }
            }
            if (acquireTimeout.isZero() || untilDeadline() <= 0 || (reply != null && reply.atOnce())) {
                failWithLastOutcome();
            } else {
                pause(store.pause(call, attempts.get()));
            }
        }

        private void pause(@Nullable Duration step) {
            long t = turn.get();
            pausedTurn = t;
            if (woken.getAndSet(false)) {
                if (turn.compareAndSet(t, t + 1)) {
                    attempt();
                }
                return;
            }
            arm(t, step, () -> {
                if (turn.compareAndSet(t, t + 1)) {
                    attempt();
                }
            });
        }

        /** Nanoseconds left until the acquire deadline, on the scheduler's clock (so virtual time moves it). */
        private long untilDeadline() {
            return acquireTimeout.toNanos() - (scheduler.now(TimeUnit.NANOSECONDS) - startOnScheduler);
        }

        /**
         * Arms the one timer of turn {@code t}: {@code task} after {@code delay} ({@code null}: none),
         * or the acquire deadline if that comes first, which then fails the acquisition.
         */
        private void arm(long t, @Nullable Duration delay, Runnable task) {
            long left = acquireTimeout.isZero() ? Long.MAX_VALUE : Math.max(0, untilDeadline());
            boolean deadlineFirst = delay == null || delay.toNanos() >= left;
            if (deadlineFirst && left == Long.MAX_VALUE) {
                return; // nothing to wait for: the turn ends by its reply or a wake-up
            }
            Disposable d = scheduler.schedule(deadlineFirst ? () -> {
                if (turn.compareAndSet(t, t + 1)) {
                    failWithLastOutcome();
                }
            } : task, deadlineFirst ? left : delay.toNanos(), TimeUnit.NANOSECONDS);
            alarm = d;
            if (turn.get() != t) {
                d.dispose(); // the turn ended while the timer was being armed
            }
        }

        private void stopTimers() {
            turn.incrementAndGet();
            dispose(alarm);
        }

        private void succeed(Lease lease) {
            if (settled.compareAndSet(false, true)) {
                Objects.requireNonNull(sink).success(lease);
            }
        }

        private void failWithLastOutcome() {
            LockStore.Reply outstanding = store.outstanding(call);
            LockStore.Reply refusal = outstanding != null ? outstanding : lastRefusal;
            Throwable error = outstanding != null ? null : lastError;
            if (error != null) {
                fail(Reason.REDIS_UNAVAILABLE, "of " + error, error);
            } else if (refusal != null) {
                fail(Objects.requireNonNull(refusal.refusal()), Objects.requireNonNull(refusal.detail()), refusal.error());
            } else {
                fail(Reason.BUSY, "it stayed busy", null);
            }
        }

        private void fail(Reason reason, String detail, @Nullable Throwable cause) {
            if (settled.compareAndSet(false, true)) {
                Duration waited = Duration.ofNanos(clock() - startNanos);
                LockAcquisitionException failure = new LockAcquisitionException(name, reason, attempts.get(), waited,
                        detail, cause);
                listener.acquireFailed(name, failure, waited);
                Objects.requireNonNull(sink).error(failure);
            }
        }

        <T> Mono<T> run(Lease lease, Function<? super LockLease, ? extends Mono<T>> body) {
            if (!state.compareAndSet(ACQUIRING, HELD)) {
                return Mono.empty(); // the subscriber left while the grant was in flight; finish() released it
            }
            held();
            Mono<T> work = Mono.defer(() -> Objects.requireNonNull(body.apply(lease), "the body function returned null"));
            return Mono.firstWithSignal(work, watchdog(lease), cutOnClose());
        }

        /** {@link #run} for a body of many values: they pass while the watchdog lets the body run. */
        <T> Flux<T> runMany(Lease lease, Function<? super LockLease, ? extends Publisher<T>> body) {
            if (!state.compareAndSet(ACQUIRING, HELD)) {
                return Flux.empty(); // the subscriber left while the grant was in flight; finish() released it
            }
            held();
            Flux<T> work = Flux.defer(() -> Objects.requireNonNull(body.apply(lease), "the body function returned null"));
            AtomicReference<Throwable> stopped = new AtomicReference<>();
            Mono<Boolean> dog = Mono.firstWithSignal(this.<Boolean>watchdog(lease), this.<Boolean>cutOnClose()).onErrorResume(e -> {
                stopped.set(e);
                return Mono.just(true);
            });
            return work.takeUntilOther(dog).concatWith(Mono.defer(() -> {
                Throwable e = stopped.get();
                return e == null ? Mono.empty() : Mono.error(e);
            }));
        }

        private void held() {
            pending.decrementAndGet();
            store.stopWaiting(call);
            heldSinceNanos = clock();
            listener.acquired(name, Duration.ofNanos(heldSinceNanos - startNanos));
        }

        /** Never emits; fails when the lease is lost or the maximum lease time is reached. */
        private <T> Mono<T> watchdog(Lease lease) {
            // A grant that came late, with less than one renewal interval of its lease left: the
            // renewals count from when that lease began, so the first is due at once. Otherwise from
            // now, on the scheduler's clock (which virtual time moves; the lease is on the real one).
            long left = lease.validUntilNanos() - System.nanoTime();
            long spent = left < options.renewalIntervalFor(ttl()).toNanos() ? Math.max(0, ttlNanos - left) : 0;
            return Watchdog.<T>watch(name, ttl(), spent, options, scheduler, listener, every -> Watchdog.renewWhileValid(name,
                            lease, every, options, scheduler,
                            Mono.defer(() -> store.renew(call, lease)).doOnSuccess(v -> listener.renewed(name))
                                    .doOnError(e -> lastRenewError = e),
                            store::isTransient, () -> {
                                Throwable last = lastRenewError;
                                return new LockLostException(name, "could not renew it before the lease ran out"
                                        + (last == null ? "" : " (last: " + last.getMessage() + ")"), last);
                            }))
                    .doOnSubscribe(s -> activeLeases.incrementAndGet())
                    .doFinally(signal -> activeLeases.decrementAndGet());
        }

        /**
         * The body completed (with or without a value): releases, then fails with
         * {@link LockLostException} instead of letting the value through if the lease had run out
         * by then, as it can for a body frozen past its lease before the watchdog noticed (a
         * stop-the-world pause): the caller must not take the outcome as made under the lock.
         */
        Mono<Void> complete(Lease lease) {
            if (lease.validUntilNanos() - System.nanoTime() > 0 || state.get() != HELD) {
                return release(null);
            }
            LockLostException lost = new LockLostException(name, "its lease ran out before the body completed", null);
            listener.lost(name, lost); // before released, as for every lost lease
            return release(null).then(Mono.error(lost));
        }

        /** Releases once, for the path that leaves HELD; never fails, never replaces the body's outcome. */
        Mono<Void> release(@Nullable Throwable bodyError) {
            if (!state.compareAndSet(HELD, DONE)) {
                return Mono.empty();
            }
            listener.released(name, Duration.ofNanos(clock() - heldSinceNanos));
            if (bodyError instanceof LockLostException) {
                // The lease is gone: the caller is told now, not after retries against a store that failed us.
                releaseInBackground("losing its lease");
                return Mono.empty();
            }
            workStarted(); // until answered: close() waits for it
            return store.release(call).doOnNext(handedOn -> {
                if (handedOn) {
                    listener.handedOff(name);
                }
            }).then().onErrorResume(e -> {
                Throwable cause = unwrap(e);
                if (bodyError != null) {
                    bodyError.addSuppressed(cause);
                }
                log.warn("Could not release lock '{}' yet; retrying in the background", name, cause);
                releaseInBackground("a failed release");
                return Mono.empty();
            }).doFinally(signal -> workEnded());
        }

        /** After the subscription ends: releases what an acquisition that never ran its body may hold or have been handed. */
        void finish() {
            if (state.compareAndSet(ACQUIRING, DONE)) {
                pending.decrementAndGet();
                stopTimers();
                store.stopWaiting(call);
                if (attempts.get() > 0 || mayBeHanded) {
                    releaseInBackground("an abandoned acquisition");
                }
            }
            workEnded(); // the subscription's own
        }

        /** Releases without anyone waiting for it; see {@link BackgroundReleases}. */
        void releaseInBackground(String why) {
            if (releaseByNanos == 0) {
                releaseByNanos = System.nanoTime() + ttlNanos;
            }
            log.debug("Releasing lock '{}' in the background after {}", name, why);
            workStarted(); // until this release is answered, or given up
            releasing.compute(name, (n, existing) -> {
                BackgroundReleases r = existing == null ? new BackgroundReleases(n) : existing;
                r.queue.add(this);
                return r;
            }).kick();
        }

        private long clock() {
            return durationsOnSchedulerClock ? scheduler.now(TimeUnit.NANOSECONDS) : System.nanoTime();
        }
    }

    private static void dispose(@Nullable Disposable d) {
        if (d != null) {
            d.dispose();
        }
    }

    /**
     * The background releases of one lock name, coalesced: one round of commands at a time and at
     * most one timer, however many abandoned acquisitions an outage with cancel churn piles up.
     * A release failing with a transient error is tried again one longest backoff step later,
     * until the lease it would free has expired anyway.
     */
    private final class BackgroundReleases {
        final String name;
        final Queue<Acquisition> queue = new ConcurrentLinkedQueue<>();
        final AtomicInteger wip = new AtomicInteger();

        BackgroundReleases(String name) {
            this.name = name;
        }

        void kick() {
            if (wip.getAndIncrement() == 0) {
                round();
            }
        }

        private void round() {
            List<Acquisition> batch = new ArrayList<>();
            for (Acquisition a; (a = queue.poll()) != null; ) {
                batch.add(a);
            }
            Flux.fromIterable(batch)
                    .flatMap(a -> Mono.fromCompletionStage(() -> store.releaseAbandoned(a.call))
                            .timeout(options.commandTimeout(), timers)
                            .then(Mono.<Acquisition>empty())
                            .onErrorResume(e -> retryable(a, unwrap(e)) ? Mono.just(a) : Mono.empty())
                            .doOnSuccess(again -> {
                                if (again == null) {
                                    a.workEnded();
                                }
                            }))
                    .collectList()
                    .subscribe(again -> {
                        if (again.isEmpty()) {
                            roundDone();
                        } else {
                            queue.addAll(again);
                            releaseRetryTimers.incrementAndGet();
                            timers.schedule(() -> {
                                releaseRetryTimers.decrementAndGet();
                                round();
                            }, options.maxBackoff().toNanos(), TimeUnit.NANOSECONDS);
                        }
                    });
        }

        private boolean retryable(Acquisition a, Throwable e) {
            if (store.isTransient(e) && System.nanoTime() - a.releaseByNanos < 0 && !gaveUp) {
                return true;
            }
            log.warn("Could not release lock '{}' in the background; it expires by its TTL", name, e);
            return false;
        }

        private void roundDone() {
            if (wip.getAndSet(0) > 1 && wip.getAndIncrement() == 0) {
                round(); // releases queued while this round ran
                return;
            }
            releasing.computeIfPresent(name, (n, r) -> r == this && r.wip.get() == 0 && r.queue.isEmpty() ? null : r);
        }
    }
}
