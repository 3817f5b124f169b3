package io.reactivelock;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.pubsub.StatefulRedisClusterPubSubConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.reactivelock.internal.Arguments;
import io.reactivelock.internal.Backoff;
import io.reactivelock.internal.LockKeys;
import io.reactivelock.internal.LockScripts;
import io.reactivelock.internal.LuaScript;
import io.reactivelock.internal.RedisErrors;
import io.reactivelock.internal.ReleaseNotices;
import io.reactivelock.internal.SafeLockListener;
import io.reactivelock.internal.ScriptExecutor;
import io.reactivelock.internal.Tokens;
import io.reactivelock.internal.Watchdog;
import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.util.Logger;
import reactor.util.Loggers;
import reactor.util.retry.Retry;

/**
 * A {@link ReactiveLock} on one Redis deployment reached through Lettuce: a standalone server,
 * a Sentinel-managed master (a Sentinel {@link RedisURI}) or a Cluster.
 *
 * <pre>{@code
 * ReactiveRedisLock locks = ReactiveRedisLock.create(RedisURI.create("redis://localhost:6379"));
 * Mono<Receipt> receipt = locks.withLock("order:" + id, Duration.ofSeconds(10), pay(id));
 * }</pre>
 *
 * <p>Protocol: acquire is one Lua script ({@code SET key token NX PX ttl} and a fencing token);
 * release and renewal are Lua compare-and-act scripts on the token; all run by {@code EVALSHA}.
 * Thread-safe; one instance serves the whole application. It starts no threads of its own:
 * timers run on {@link LockOptions#scheduler()} and replies arrive on Lettuce's event loops.
 *
 * <p>An instance made from a {@link RedisURI} owns its client and connection and closes them in
 * {@link #closeAsync()}; one made from a connection never closes it.
 */
public final class ReactiveRedisLock implements ReactiveLock, AutoCloseable {

    private static final Logger log = Loggers.getLogger(ReactiveRedisLock.class);

    /** How long the fencing record outlives the lease it was issued with. */
    private static final Duration FENCE_RETENTION = Duration.ofSeconds(60);

    private static final int ACQUIRING = 0;
    private static final int HELD = 1;
    private static final int DONE = 2;

    private final LockOptions options;
    private final LockKeys keys;
    private final ScriptExecutor scripts;
    private final @Nullable ReleaseNotices<Session> notices;
    private final Backoff backoff;
    private final LockListener listener;
    private final Supplier<CompletionStage<?>> closeResources;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Sessions still ACQUIRING; bounded by {@link LockOptions#maxPendingAcquisitions()}. */
    private final AtomicInteger pending = new AtomicInteger();
    private final AtomicInteger activeLeases = new AtomicInteger();

    private ReactiveRedisLock(LockOptions options, ScriptExecutor scripts, @Nullable ReleaseNotices<Session> notices,
            Supplier<CompletionStage<?>> closeResources) {
        this.options = Objects.requireNonNull(options, "options");
        this.keys = new LockKeys(options.keyPrefix());
        this.scripts = scripts;
        this.notices = notices;
        this.backoff = new Backoff(options.minBackoff(), options.maxBackoff(), options.jitter());
        this.listener = SafeLockListener.of(options.listener());
        this.closeResources = closeResources;
        Tokens.seed();
    }

    /** Connects to {@code uri} with the default options; see {@link #create(RedisURI, LockOptions)}. */
    public static ReactiveRedisLock create(RedisURI uri) {
        return create(uri, LockOptions.defaults());
    }

    /**
     * Creates a client for {@code uri} (standalone or Sentinel) and the two connections this lock
     * needs (commands, and pub/sub for release notices), all owned by this lock. Connecting
     * blocks: call it at start-up, not on a reactive thread. The client rejects commands while
     * disconnected, so an attempt made during an outage fails fast and is retried with backoff
     * instead of being buffered and replayed after its caller gave up.
     *
     * @throws io.lettuce.core.RedisConnectionException if Redis cannot be reached
     */
    public static ReactiveRedisLock create(RedisURI uri, LockOptions options) {
        Objects.requireNonNull(uri, "uri");
        Objects.requireNonNull(options, "options");
        RedisClient client = RedisClient.create(uri);
        client.setOptions(ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .build());
        try {
            return connect(client, options, client::shutdownAsync);
        } catch (RuntimeException e) {
            client.shutdownAsync();
            throw e;
        }
    }

    /**
     * Opens the two connections this lock needs (commands, and pub/sub for release notices) from
     * the caller's client, which must have a default {@link RedisURI}. The lock owns and closes
     * the connections, not the client. Connecting blocks: call it at start-up. Give the client
     * {@code DisconnectedBehavior.REJECT_COMMANDS}, as {@link #create(RedisURI, LockOptions)} does, so that
     * attempts fail fast during an outage instead of being buffered and replayed on reconnect.
     */
    public static ReactiveRedisLock create(RedisClient client, LockOptions options) {
        Objects.requireNonNull(client, "client");
        Objects.requireNonNull(options, "options");
        return connect(client, options, () -> CompletableFuture.completedFuture(null));
    }

    private static ReactiveRedisLock connect(RedisClient client, LockOptions options,
            Supplier<CompletionStage<?>> closeClient) {
        StatefulRedisConnection<String, String> commands = client.connect(StringCodec.UTF8);
        StatefulRedisPubSubConnection<String, String> pubSub;
        try {
            pubSub = client.connectPubSub(StringCodec.UTF8);
        } catch (RuntimeException e) {
            commands.closeAsync();
            throw e;
        }
        return new ReactiveRedisLock(options, new ScriptExecutor(commands.async()), new ReleaseNotices<>(pubSub),
                // The connections finish closing on the client's event loop; shutting the client down
                // from there would block that loop (and can deadlock it), so hop off it first.
                () -> CompletableFuture.allOf(commands.closeAsync(), pubSub.closeAsync())
                        .thenComposeAsync(done -> closeClient.get(), task -> Schedulers.boundedElastic().schedule(task)));
    }

    /**
     * Uses the caller's connection, which it never closes. Without a pub/sub connection waiters
     * poll with backoff only; prefer {@link #create(RedisClient, LockOptions)} under contention.
     * The connection's client should reject commands while disconnected, as for that factory.
     */
    public static ReactiveRedisLock create(StatefulRedisConnection<String, String> connection, LockOptions options) {
        Objects.requireNonNull(connection, "connection");
        return new ReactiveRedisLock(options, new ScriptExecutor(connection.async()), null,
                () -> CompletableFuture.completedFuture(null));
    }

    /**
     * Opens the two Cluster connections this lock needs (commands, routed by hash slot, and pub/sub
     * for release notices) from the caller's client. The lock owns and closes the connections, not
     * the client. All keys of one lock share a hash slot, and a release notice reaches a subscriber
     * on any node. Connecting blocks: call it at start-up.
     *
     * <p>Give the client {@link io.lettuce.core.cluster.ClusterTopologyRefreshOptions topology
     * refresh} (adaptive triggers, a periodic refresh) so that it finds a promoted replica after a
     * failover; a held lock whose key did not reach that replica is reported to its holder as
     * {@link LockLostException} at the next renewal.
     */
    public static ReactiveRedisLock create(RedisClusterClient client, LockOptions options) {
        Objects.requireNonNull(client, "client");
        Objects.requireNonNull(options, "options");
        StatefulRedisClusterConnection<String, String> commands = client.connect(StringCodec.UTF8);
        StatefulRedisClusterPubSubConnection<String, String> pubSub;
        try {
            pubSub = client.connectPubSub(StringCodec.UTF8);
        } catch (RuntimeException e) {
            commands.closeAsync();
            throw e;
        }
        return new ReactiveRedisLock(options, new ScriptExecutor(commands.async()), new ReleaseNotices<>(pubSub),
                () -> CompletableFuture.allOf(commands.closeAsync(), pubSub.closeAsync()));
    }

    /** Uses the caller's Cluster connection, which it never closes. Waiters poll with backoff. */
    public static ReactiveRedisLock create(StatefulRedisClusterConnection<String, String> connection,
            LockOptions options) {
        Objects.requireNonNull(connection, "connection");
        return new ReactiveRedisLock(options, new ScriptExecutor(connection.async()), null,
                () -> CompletableFuture.completedFuture(null));
    }

    /**
     * How many leases this lock is keeping alive right now: bodies running with their renewal
     * watchdog. For metrics and tests; zero once every {@code withLock} has ended.
     */
    public int activeLeases() {
        return activeLeases.get();
    }

    /** The options this lock was created with. */
    public LockOptions options() {
        return options;
    }

    @Override
    public <T> Mono<T> withLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
        Arguments.checkCall(name, ttl, body, options, listener, () -> {});
        String lockKey = keys.lockKey(name);
        return Mono.defer(() -> {
            if (closed.get()) {
                IllegalStateException error = new IllegalStateException("lock '" + name + "' requested after close()");
                listener.acquireFailed(name, error, Duration.ZERO);
                return Mono.error(error);
            }
            if (pending.incrementAndGet() > options.maxPendingAcquisitions()) {
                pending.decrementAndGet();
                TooManyPendingAcquisitionsException error =
                        new TooManyPendingAcquisitionsException(name, options.maxPendingAcquisitions());
                listener.acquireFailed(name, error, Duration.ZERO);
                return Mono.error(error);
            }
            Session session = new Session(name, lockKey, ttl); // gives the slot back when it leaves ACQUIRING
            return Mono.usingWhen(session.acquire(), lease -> session.run(lease, body),
                            lease -> session.release(null), (lease, error) -> session.release(error),
                            lease -> session.release(null))
                    .doFinally(signal -> session.finish());
        });
    }

    /**
     * Closes what this lock owns (the connection and client it created), without blocking.
     * Locks requested afterwards fail; locks held stay until released or expired.
     */
    public Mono<Void> closeAsync() {
        return Mono.defer(() -> closed.compareAndSet(false, true)
                ? Mono.fromCompletionStage(closeResources.get()).then()
                : Mono.empty());
    }

    /** How many acquisitions in this process wait for a release notice of lock {@code name}; for tests. */
    int localWaiters(String name) {
        return notices == null ? 0 : notices.waiters(LockKeys.releaseChannel(keys.lockKey(name)));
    }

    /** Blocking {@link #closeAsync()}, for shutdown code. */
    @Override
    public void close() {
        closeAsync().block();
    }

    /**
     * One subscription of {@code withLock}: one token, its attempts, its lease, and who releases.
     *
     * <p>Cancel safety does not rely on cancellation reaching an in-flight attempt (Reactor does
     * not guarantee that through {@code retryWhen}, see reactor-core#4398). The state moves once
     * from ACQUIRING to HELD (the body may run) or to DONE (the subscription ended first); a
     * release is sent by whoever leaves HELD, or by {@link #finish()} when leaving ACQUIRING after
     * any attempt was sent, and every attempt's reply is watched so that a grant arriving after
     * DONE is released as well. Release is a compare-and-delete on the token, so repeating it is
     * harmless.
     */
    private final class Session {
        private final String name;
        private final String[] lockKeys;
        private final String[] acquireKeys;
        private final String[] acquireArgs;
        private final String[] releaseKeys;
        private final String[] releaseArgs;
        private final String channel;
        private final String token = Tokens.next();
        private final long ttlNanos;
        private final String ttlMillis;
        private final String fenceRetention;
        private final long renewalEveryNanos;
        private final Scheduler scheduler = options.scheduler();
        private final long startNanos = System.nanoTime();
        private final AtomicInteger state = new AtomicInteger(ACQUIRING);
        private final AtomicInteger attempts = new AtomicInteger();
        private volatile long heldSinceNanos;
        private volatile ReleaseNotices.@Nullable Waiter<Session> waiter;
        /** The lease a releasing holder in this process handed straight to this acquisition. */
        private volatile @Nullable LockLease handedLease;
        /** Set before a holder in this process sends a hand-off to this acquisition. */
        private volatile boolean mayBeHandedTheLock;
        private volatile @Nullable Throwable lastError;
        private volatile @Nullable Throwable lastRenewError;

        Session(String name, String lockKey, Duration ttl) {
            this.name = name;
            this.ttlNanos = ttl.toNanos();
            this.ttlMillis = Long.toString(ttl.toMillis());
            this.channel = LockKeys.releaseChannel(lockKey);
            this.fenceRetention = Long.toString(ttl.plus(FENCE_RETENTION).toMillis());
            this.renewalEveryNanos = options.renewalIntervalFor(ttl).toNanos();
            String fenceKey = LockKeys.fenceKey(lockKey);
            this.lockKeys = new String[] {lockKey};
            if (options.fair()) {
                String waiterLease = Long.toString(options.waiterLease().toMillis());
                this.acquireKeys = new String[] {lockKey, fenceKey, LockKeys.queueKey(lockKey), LockKeys.waitersKey(lockKey)};
                this.acquireArgs = new String[] {token, ttlMillis, fenceRetention, waiterLease};
                this.releaseKeys = acquireKeys;
                this.releaseArgs = new String[] {token, channel, fenceRetention, waiterLease};
            } else {
                this.acquireKeys = new String[] {lockKey, fenceKey};
                this.acquireArgs = new String[] {token, ttlMillis, fenceRetention};
                this.releaseKeys = lockKeys;
                this.releaseArgs = new String[] {token, channel};
            }
        }

        Mono<LockLease> acquire() {
            Mono<LockLease> once = Mono.defer(this::attempt);
            if (options.acquireTimeout().isZero()) {
                return once.onErrorMap(this::acquisitionFailure);
            }
            Mono<LockLease> attempts = once.retryWhen(Retry.from(signals -> signals.concatMap(signal -> {
                Throwable failure = signal.failure();
                if (failure != Busy.INSTANCE && !RedisErrors.isTransient(failure)) {
                    return Mono.error(failure);
                }
                ReleaseNotices.Waiter<Session> joined = waiter;
                if (failure != Busy.INSTANCE && joined != null) {
                    // A waiter retrying after a Redis error can still be handed the lock: let that end the wait.
                    return joined.sleep(backoff.step(signal.totalRetriesInARow()), scheduler).thenReturn(signal);
                }
                if (failure != Busy.INSTANCE || notices == null) {
                    return Mono.delay(backoff.step(signal.totalRetriesInARow()), scheduler).thenReturn(signal);
                }
                ReleaseNotices.Waiter<Session> w = waiter(notices);
                // Once Redis confirmed the subscription, every release wakes a waiter here: polling
                // only covers lost notices and expiries, so the longest step does.
                Duration step = backoff.step(w.listening() ? Long.MAX_VALUE : signal.totalRetriesInARow());
                return w.sleep(step, scheduler).thenReturn(signal);
            })));
            return Mono.defer(() -> queueBehindLocalWaiters()
                            ? waiter(notices).sleep(backoff.step(0), scheduler).then(attempts)
                            : attempts)
                    .timeout(options.acquireTimeout(), scheduler)
                    .onErrorMap(this::acquisitionFailure);
        }

        /**
         * In non-fair mode a newcomer does not try ahead of this process's waiters on the lock: it
         * queues behind them for a hand-off (or the first backoff step), which keeps local hand-offs
         * in arrival order and spares an attempt that would find the lock busy.
         */
        private boolean queueBehindLocalWaiters() {
            return notices != null && !options.fair() && notices.waiters(channel) > 0;
        }

        private ReleaseNotices.Waiter<Session> waiter(ReleaseNotices<Session> notices) {
            ReleaseNotices.Waiter<Session> w = waiter;
            if (w == null) {
                w = notices.join(channel, token, this);
                waiter = w;
                if (state.get() != ACQUIRING) {
                    w.leave(); // the acquisition ended while it was joining
                }
            }
            return w;
        }

        private void stopWaiting() {
            ReleaseNotices.Waiter<Session> w = waiter;
            if (w != null) {
                w.leave();
            }
        }

        private Mono<LockLease> attempt() {
            LockLease handed = handedLease;
            if (handed != null && handed.validUntilNanos() - System.nanoTime() > ttlNanos - renewalEveryNanos) {
                return Mono.just(handed);
            }
            // Not handed over, or too long ago for the first renewal to come in time: a normal
            // attempt, which with this token extends a lock handed to it and returns its fence.
            attempts.incrementAndGet();
            long sentAt = System.nanoTime();
            // Checked before the reply reaches the subscriber: a grant seen after this session ended
            // is released, whether the session never held the lock or already released it (an
            // earlier attempt's grant can run after that release through a NOSCRIPT fallback).
            CompletableFuture<Long> reply = scripts
                    .run(options.fair() ? LockScripts.ACQUIRE_FAIR : LockScripts.ACQUIRE, acquireKeys, acquireArgs)
                    .toCompletableFuture()
                    .whenComplete((fence, error) -> {
                        if (fence != null && fence > 0 && state.get() == DONE) {
                            releaseInBackground("a grant that arrived after the acquisition ended");
                        }
                    });
            return Mono.fromFuture(reply, true)
                    .timeout(options.commandTimeout(), scheduler)
                    .doOnError(error -> lastError = error)
                    .flatMap(fence -> {
                        lastError = null;
                        return fence > 0
                                ? Mono.just(new LockLease(name, token, fence, sentAt + ttlNanos))
                                : Mono.error(Busy.INSTANCE);
                    });
        }

        private Throwable acquisitionFailure(Throwable error) {
            Throwable cause = error == Busy.INSTANCE || error instanceof TimeoutException
                    ? lastError
                    : ScriptExecutor.unwrap(error);
            Duration waited = Duration.ofNanos(System.nanoTime() - startNanos);
            LockAcquisitionException failure = new LockAcquisitionException(name, attempts.get(), waited, cause);
            listener.acquireFailed(name, failure, waited);
            return failure;
        }

        <T> Mono<T> run(LockLease lease, Function<? super LockLease, ? extends Mono<T>> body) {
            if (!state.compareAndSet(ACQUIRING, HELD)) {
                return Mono.empty(); // the subscriber left while the grant was in flight; finish() released it
            }
            pending.decrementAndGet();
            heldSinceNanos = System.nanoTime();
            listener.acquired(name, Duration.ofNanos(heldSinceNanos - startNanos));
            stopWaiting();
            Mono<T> work = Mono.defer(() -> Objects.requireNonNull(body.apply(lease), "the body function returned null"));
            return Mono.firstWithSignal(work, watchdog(lease));
        }

        /** Never emits; fails when the lease is lost or the maximum lease time is reached. */
        private <T> Mono<T> watchdog(LockLease lease) {
            return Watchdog.<T>watch(name, Duration.ofNanos(ttlNanos), options, scheduler, listener,
                            every -> renew(lease, every))
                    .doOnSubscribe(s -> activeLeases.incrementAndGet())
                    .doFinally(signal -> activeLeases.decrementAndGet());
        }

        private Mono<Void> renew(LockLease lease, Duration every) {
            Mono<Void> once = Mono.defer(() -> {
                long sentAt = System.nanoTime();
                return command(LockScripts.RENEW, lockKeys, token, ttlMillis).flatMap(renewed -> {
                    if (renewed == 1) {
                        lease.extendTo(sentAt + ttlNanos);
                        listener.renewed(name);
                        return Mono.empty();
                    }
                    return Mono.error(new LockLostException(name, "it expired or another holder took it", null));
                });
            });
            return Watchdog.renewWhileValid(name, lease, every, options, scheduler,
                    once.doOnError(e -> lastRenewError = e), RedisErrors::isTransient,
                    () -> new LockLostException(name, "could not renew it before the lease ran out", lastRenewError));
        }

        /**
         * Releases once, for the path that leaves HELD; never fails, never replaces the body's outcome.
         * After a lost lease the release is sent without waiting for it.
         */
        Mono<Void> release(@Nullable Throwable bodyError) {
            if (!state.compareAndSet(HELD, DONE)) {
                return Mono.empty();
            }
            listener.released(name, Duration.ofNanos(System.nanoTime() - heldSinceNanos));
            if (bodyError instanceof LockLostException) {
                // The lease is gone: the caller is told now, not after retries against a Redis that failed us.
                releaseInBackground("losing its lease");
                return Mono.empty();
            }
            return handOffOrRelease().onErrorResume(e -> {
                if (bodyError != null) {
                    bodyError.addSuppressed(e);
                }
                log.warn("Could not release lock '{}' yet; retrying in the background", name, e);
                releaseInBackground("a failed release");
                return Mono.empty();
            });
        }

        /**
         * After the subscription ends: releases what an acquisition that never ran its body may
         * hold, and in fair mode takes its place out of the line.
         */
        void finish() {
            if (state.compareAndSet(ACQUIRING, DONE)) {
                pending.decrementAndGet();
                stopWaiting();
                if (attempts.get() > 0 || mayBeHandedTheLock) {
                    releaseInBackground("an abandoned acquisition");
                }
            }
        }

        /**
         * Hands the lock straight to this process's longest waiter when there is one, else
         * releases it. Non-fair, the waiter gets it at once ({@code HAND_OVER}); fair, the release
         * names the waiter and hands it over directly if it is first in line in Redis (else the
         * first in line gets it as usual). A hand-off whose outcome is unknown falls back to an
         * ordinary release: if the hand-off did happen, that release finds another token and
         * changes nothing, and the woken waiter's own attempt finds its token holding the lock.
         */
        private Mono<Void> handOffOrRelease() {
            ReleaseNotices.Waiter<Session> next = notices == null
                    ? null
                    // Non-fair runs of local hand-offs last at most one longest backoff step, the
                    // longest a waiter elsewhere sleeps between attempts; fair mode keeps Redis's order.
                    : notices.reserveLongestWaiting(channel, options.fair() ? null : options.maxBackoff());
            if (next == null) {
                return releaseCommand();
            }
            Session recipient = next.owner();
            return Mono.defer(() -> {
                long sentAt = System.nanoTime();
                recipient.mayBeHandedTheLock = true; // before sending: its finish() then releases whatever happens
                // The grant is taken from the command itself, so that one answered after our timeout
                // still reaches the recipient (or is released if the recipient has ended).
                CompletableFuture<Long> handOff = (options.fair()
                        ? scripts.run(LockScripts.RELEASE_FAIR, releaseKeys, concat(releaseArgs, recipient.token,
                                recipient.ttlMillis))
                        : scripts.run(LockScripts.HAND_OVER, acquireKeys, token, recipient.token,
                                recipient.fenceRetention, recipient.ttlMillis))
                        .toCompletableFuture()
                        .whenComplete((result, error) -> {
                            if (result != null && handedOver(result)) {
                                recipient.receive(result, sentAt);
                            }
                        });
                return Mono.fromFuture(handOff, true)
                        .timeout(options.commandTimeout(), scheduler)
                        .doOnNext(result -> {
                            if (!handedOver(result)) {
                                next.unreserve();
                                if (!options.fair()) { // the lease was already gone: the waiter tries on its own
                                    next.handOver();
                                }
                            }
                        })
                        .then()
                        .onErrorResume(e -> {
                            recipient.releaseIfEnded("a hand-off whose outcome is unknown");
                            next.unreserve();
                            next.handOver();
                            return releaseCommand();
                        });
            });
        }

        /** Whether a hand-off script's result means the named waiter got the lock (then it is the fence). */
        private boolean handedOver(long result) {
            return options.fair() ? result > 1 : result > 0;
        }

        private static String[] concat(String[] args, String... more) {
            String[] all = Arrays.copyOf(args, args.length + more.length);
            System.arraycopy(more, 0, all, args.length, more.length);
            return all;
        }

        /** Takes the lock a local holder handed over; gives it back if this acquisition already ended. */
        private void receive(long fence, long sentAt) {
            handedLease = new LockLease(name, token, fence, sentAt + ttlNanos);
            if (!releaseIfEnded("a hand-off that arrived after the acquisition ended")) {
                ReleaseNotices.Waiter<Session> w = waiter;
                if (w != null) {
                    w.handOver();
                }
            }
        }

        /**
         * Releases what a hand-off may have given this acquisition if it has already ended. An
         * acquisition that ends later releases on its own: its release reaches Redis after the
         * hand-off, on the same connection.
         */
        private boolean releaseIfEnded(String what) {
            if (state.get() == DONE) {
                releaseInBackground(what);
                return true;
            }
            return false;
        }

        /**
         * Releases without anyone waiting, retrying transient failures (a reconnect can take longer
         * than the awaited release's few retries) until the lock would have expired anyway.
         */
        private void releaseInBackground(String what) {
            LuaScript script = options.fair() ? LockScripts.RELEASE_FAIR : LockScripts.RELEASE;
            Mono.defer(() -> command(script, releaseKeys, releaseArgs))
                    .retryWhen(Retry.backoff(Long.MAX_VALUE, options.minBackoff()).maxBackoff(options.maxBackoff())
                            .scheduler(scheduler).filter(RedisErrors::isTransient))
                    .timeout(Duration.ofNanos(ttlNanos), scheduler)
                    .subscribe(null, e -> log.warn("Could not release lock '{}' after {}; it expires by its TTL",
                            name, what, e));
        }

        private Mono<Void> releaseCommand() {
            LuaScript script = options.fair() ? LockScripts.RELEASE_FAIR : LockScripts.RELEASE;
            return Mono.defer(() -> command(script, releaseKeys, releaseArgs))
                    .retryWhen(Retry.backoff(3, options.minBackoff()).scheduler(scheduler).filter(RedisErrors::isTransient))
                    .then();
        }

        private Mono<Long> command(LuaScript script, String[] keys, String... args) {
            return Mono.fromCompletionStage(() -> scripts.run(script, keys, args))
                    .timeout(options.commandTimeout(), scheduler);
        }
    }

    /** The signal between an attempt that found the lock busy and the retry that handles it. */
    private static final class Busy extends RuntimeException {
        private static final long serialVersionUID = 1L;
        static final Busy INSTANCE = new Busy();

        private Busy() {
            super("busy", null, false, false);
        }
    }
}
