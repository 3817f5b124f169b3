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
import io.reactivelock.internal.ScriptExecutor;
import io.reactivelock.internal.Tokens;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
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
    private final @Nullable ReleaseNotices notices;
    private final Backoff backoff;
    private final Supplier<CompletionStage<?>> closeResources;
    private final AtomicBoolean closed = new AtomicBoolean();

    private ReactiveRedisLock(LockOptions options, ScriptExecutor scripts, @Nullable ReleaseNotices notices,
            Supplier<CompletionStage<?>> closeResources) {
        this.options = Objects.requireNonNull(options, "options");
        this.keys = new LockKeys(options.keyPrefix());
        this.scripts = scripts;
        this.notices = notices;
        this.backoff = new Backoff(options.minBackoff(), options.maxBackoff(), options.jitter());
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
     * the connections, not the client. Connecting blocks: call it at start-up.
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
        return new ReactiveRedisLock(options, new ScriptExecutor(commands.async()), new ReleaseNotices(pubSub),
                // The connections finish closing on the client's event loop; shutting the client down
                // from there would block that loop (and can deadlock it), so hop off it first.
                () -> CompletableFuture.allOf(commands.closeAsync(), pubSub.closeAsync())
                        .thenComposeAsync(done -> closeClient.get(), task -> Schedulers.boundedElastic().schedule(task)));
    }

    /**
     * Uses the caller's connection, which it never closes. Without a pub/sub connection waiters
     * poll with backoff only; prefer {@link #create(RedisClient, LockOptions)} under contention.
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
        return new ReactiveRedisLock(options, new ScriptExecutor(commands.async()), new ReleaseNotices(pubSub),
                () -> CompletableFuture.allOf(commands.closeAsync(), pubSub.closeAsync()));
    }

    /** Uses the caller's Cluster connection, which it never closes. Waiters poll with backoff. */
    public static ReactiveRedisLock create(StatefulRedisClusterConnection<String, String> connection,
            LockOptions options) {
        Objects.requireNonNull(connection, "connection");
        return new ReactiveRedisLock(options, new ScriptExecutor(connection.async()), null,
                () -> CompletableFuture.completedFuture(null));
    }

    /** The options this lock was created with. */
    public LockOptions options() {
        return options;
    }

    @Override
    public <T> Mono<T> withLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
        Arguments.checkName(name);
        Arguments.checkTtl(ttl, options);
        Objects.requireNonNull(body, "body");
        String lockKey = keys.lockKey(name);
        return Mono.defer(() -> {
            if (closed.get()) {
                return Mono.error(new IllegalStateException("lock '" + name + "' requested after close()"));
            }
            Session session = new Session(name, lockKey, ttl);
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
        private final Scheduler scheduler = options.scheduler();
        private final long startNanos = System.nanoTime();
        private final AtomicInteger state = new AtomicInteger(ACQUIRING);
        private final AtomicInteger attempts = new AtomicInteger();
        private volatile boolean everHeld;
        private volatile ReleaseNotices.@Nullable Waiter waiter;
        private volatile @Nullable Throwable lastError;
        private volatile @Nullable Throwable lastRenewError;

        Session(String name, String lockKey, Duration ttl) {
            this.name = name;
            this.ttlNanos = ttl.toNanos();
            this.ttlMillis = Long.toString(ttl.toMillis());
            this.channel = LockKeys.releaseChannel(lockKey);
            String fenceRetention = Long.toString(ttl.plus(FENCE_RETENTION).toMillis());
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
            return once.retryWhen(Retry.from(signals -> signals.concatMap(signal -> {
                        Throwable failure = signal.failure();
                        if (failure != Busy.INSTANCE && !RedisErrors.isTransient(failure)) {
                            return Mono.error(failure);
                        }
                        Duration step = backoff.step(signal.totalRetriesInARow());
                        Mono<?> pause = failure == Busy.INSTANCE && notices != null
                                ? waiter(notices).sleep(step, scheduler)
                                : Mono.delay(step, scheduler);
                        return pause.thenReturn(signal);
                    })))
                    .timeout(options.acquireTimeout(), scheduler)
                    .onErrorMap(this::acquisitionFailure);
        }

        private ReleaseNotices.Waiter waiter(ReleaseNotices notices) {
            ReleaseNotices.Waiter w = waiter;
            if (w == null) {
                w = notices.join(channel, token);
                waiter = w;
                if (state.get() != ACQUIRING) {
                    w.leave(); // the acquisition ended while it was joining
                }
            }
            return w;
        }

        private void stopWaiting() {
            ReleaseNotices.Waiter w = waiter;
            if (w != null) {
                w.leave();
            }
        }

        private Mono<LockLease> attempt() {
            attempts.incrementAndGet();
            long sentAt = System.nanoTime();
            CompletableFuture<Long> reply = scripts
                    .run(options.fair() ? LockScripts.ACQUIRE_FAIR : LockScripts.ACQUIRE, acquireKeys, acquireArgs)
                    .toCompletableFuture();
            reply.whenComplete((fence, error) -> {
                if (fence != null && fence > 0 && state.get() == DONE && !everHeld) {
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
            return new LockAcquisitionException(name, attempts.get(),
                    Duration.ofNanos(System.nanoTime() - startNanos), cause);
        }

        <T> Mono<T> run(LockLease lease, Function<? super LockLease, ? extends Mono<T>> body) {
            if (!state.compareAndSet(ACQUIRING, HELD)) {
                return Mono.empty(); // the subscriber left while the grant was in flight; finish() released it
            }
            everHeld = true;
            stopWaiting();
            Mono<T> work = Mono.defer(() -> Objects.requireNonNull(body.apply(lease), "the body function returned null"));
            return Mono.firstWithSignal(work, watchdog(lease));
        }

        /** Never emits; fails when the lease is lost or the maximum lease time is reached. */
        private <T> Mono<T> watchdog(LockLease lease) {
            Duration every = options.renewalIntervalFor(Duration.ofNanos(ttlNanos));
            Flux<Void> renewals = Flux.interval(every, scheduler)
                    .onBackpressureDrop()
                    .concatMap(tick -> renew(lease, every), 1);
            Mono<Void> cap = Mono.delay(options.maxLeaseTime(), scheduler)
                    .then(Mono.error(() -> new LeaseTimeExceededException(name, options.maxLeaseTime())));
            return Flux.merge(renewals, cap).then(Mono.never());
        }

        private Mono<Void> renew(LockLease lease, Duration every) {
            Mono<Void> once = Mono.defer(() -> {
                long sentAt = System.nanoTime();
                return command(LockScripts.RENEW, lockKeys, token, ttlMillis).flatMap(renewed -> {
                    if (renewed == 1) {
                        lease.extendTo(sentAt + ttlNanos);
                        return Mono.empty();
                    }
                    return Mono.error(new LockLostException(name, "it expired or another holder took it", null));
                });
            });
            return Mono.defer(() -> {
                Duration left = Duration.ofNanos(lease.validUntilNanos() - System.nanoTime());
                return once.doOnError(e -> lastRenewError = e)
                        .retryWhen(Retry.backoff(Long.MAX_VALUE, options.minBackoff())
                                .maxBackoff(every)
                                .scheduler(scheduler)
                                .filter(RedisErrors::isTransient))
                        .timeout(left.isNegative() ? Duration.ZERO : left,
                                Mono.error(() -> new LockLostException(name,
                                        "could not renew it before the lease ran out", lastRenewError)),
                                scheduler)
                        .onErrorMap(e -> !(e instanceof LockException),
                                e -> new LockLostException(name, "renewal failed", ScriptExecutor.unwrap(e)));
            });
        }

        /** Releases once, for the path that leaves HELD; never fails, never replaces the body's outcome. */
        Mono<Void> release(@Nullable Throwable bodyError) {
            if (!state.compareAndSet(HELD, DONE)) {
                return Mono.empty();
            }
            return releaseCommand().onErrorResume(e -> {
                if (bodyError != null) {
                    bodyError.addSuppressed(e);
                }
                log.warn("Could not release lock '{}'; it expires by its TTL", name, e);
                return Mono.empty();
            });
        }

        /**
         * After the subscription ends: releases what an acquisition that never ran its body may
         * hold, and in fair mode takes its place out of the line.
         */
        void finish() {
            if (state.compareAndSet(ACQUIRING, DONE)) {
                stopWaiting();
                if (attempts.get() > 0) {
                    releaseInBackground("an abandoned acquisition");
                }
            }
        }

        private void releaseInBackground(String what) {
            releaseCommand().subscribe(null, e -> log.warn("Could not release lock '{}' after {}; it expires by its TTL",
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
