package io.reactivelock.redlock;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLease;
import io.reactivelock.LockListener;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.internal.Arguments;
import io.reactivelock.internal.Backoff;
import io.reactivelock.internal.Leases;
import io.reactivelock.internal.LockKeys;
import io.reactivelock.internal.LockScripts;
import io.reactivelock.internal.LuaScript;
import io.reactivelock.internal.SafeLockListener;
import io.reactivelock.internal.ScriptExecutor;
import io.reactivelock.internal.Tokens;
import io.reactivelock.internal.Watchdog;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.util.Logger;
import reactor.util.Loggers;
import reactor.util.retry.Retry;

/**
 * A {@link ReactiveLock} over N independent Redis masters (the Redlock algorithm): a lock is held
 * while a majority of the masters hold it, so it survives the loss of up to (N - 1) / 2 of them.
 *
 * <pre>{@code
 * RedlockLock locks = RedlockLock.create(
 *         List.of(RedisURI.create("redis://a:6379"), RedisURI.create("redis://b:6379"), RedisURI.create("redis://c:6379")),
 *         LockOptions.defaults());
 * Mono<Receipt> receipt = locks.withLock("order:" + id, Duration.ofSeconds(10), pay(id));
 * }</pre>
 *
 * <p>Each attempt sends the single lock's acquire script to every node at once, with one token,
 * and waits at most {@linkplain RedlockOptions#nodeTimeout() the node timeout} for each reply. It
 * succeeds when a majority (N / 2 + 1) granted the lock and time is left of the lease: validity =
 * ttl - elapsed - drift, with drift = ttl x {@linkplain RedlockOptions#clockDriftFactor() clock
 * drift factor} + 2 ms, measured with {@link System#nanoTime()} from before the first command. A
 * failed attempt is released on every node (also on those that failed or did not answer) and
 * retried after a jittered backoff until the acquire timeout. Renewal extends the lease on every
 * node and needs a majority. Release deletes it on every node, and {@code withLock} signals the
 * body's outcome once a majority answered the release (the lock can be taken again then; the
 * other nodes' releases are still delivered). {@code withLock} otherwise keeps the
 * {@linkplain ReactiveLock contract} of the single lock.
 *
 * <p><b>No fencing token.</b> {@link LockLease#fencingToken()} throws
 * {@link UnsupportedOperationException}: the nodes' counters follow their own clocks, so the
 * largest one in a majority is not guaranteed to grow from one holder to the next, and a counter
 * that a restarted node forgets cannot be proved monotonic either. Use the single
 * {@link io.reactivelock.ReactiveRedisLock} where a resource must reject stale holders.
 *
 * <p><b>Restarts.</b> Redis without fsync on every write forgets locks when it restarts; a node
 * restarted empty must stay down for at least the longest TTL in use, or two holders may each
 * count it in their majority.
 *
 * <p>Thread-safe; starts no threads: timers run on {@link LockOptions#scheduler()}, replies arrive
 * on Lettuce's event loops. Owns its client and connections and closes them in {@link #closeAsync()}.
 */
public final class RedlockLock implements ReactiveLock, AutoCloseable {

    private static final Logger log = Loggers.getLogger(RedlockLock.class);

    private static final int ACQUIRING = 0;
    private static final int HELD = 1;
    private static final int DONE = 2;

    /** One script runner per master. */
    private final List<ScriptExecutor> nodes;
    private final int quorum;
    private final LockOptions options;
    private final RedlockOptions redlock;
    private final LockKeys keys;
    private final Backoff backoff;
    private final LockListener listener;
    private final RedisClient client;
    private final List<StatefulRedisConnection<String, String>> connections;
    private final AtomicBoolean closed = new AtomicBoolean();

    private RedlockLock(List<StatefulRedisConnection<String, String>> connections,
            RedisClient client, LockOptions options, RedlockOptions redlock) {
        this.nodes = connections.stream().map(c -> new ScriptExecutor(c.async())).toList();
        this.quorum = nodes.size() / 2 + 1;
        this.options = options;
        this.redlock = redlock;
        this.keys = new LockKeys(options.keyPrefix());
        this.backoff = new Backoff(options.minBackoff(), options.maxBackoff(), options.jitter());
        this.listener = SafeLockListener.of(options.listener());
        this.client = client;
        this.connections = List.copyOf(connections);
        Tokens.seed();
    }

    /** Connects to {@code nodes} with the default {@link RedlockOptions}; see {@link #create(List, LockOptions, RedlockOptions)}. */
    public static RedlockLock create(List<RedisURI> nodes, LockOptions options) {
        return create(nodes, options, RedlockOptions.defaults());
    }

    /**
     * Connects to every node, each an independent master (no replica of another). Connecting
     * blocks and needs every node up: call it at start-up, not on a reactive thread. Afterwards a
     * node that goes down only counts against the majority; commands to it fail fast while it is
     * disconnected, and its connection comes back by itself.
     *
     * <p>{@link LockOptions#fair()} is not supported: waiters retry with backoff.
     *
     * @throws IllegalArgumentException if there are fewer than 3 nodes, an even number of them, or
     *     the same server twice (same host, case-insensitive, and port; or same socket)
     * @throws io.lettuce.core.RedisConnectionException if a node cannot be reached
     */
    public static RedlockLock create(List<RedisURI> nodes, LockOptions options, RedlockOptions redlock) {
        checkNodes(nodes);
        Objects.requireNonNull(options, "options");
        Objects.requireNonNull(redlock, "redlock");
        if (options.fair()) {
            throw new IllegalArgumentException("Redlock has no fair mode; build the options with fair(false)");
        }
        RedisClient client = RedisClient.create();
        client.setOptions(ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .build());
        List<StatefulRedisConnection<String, String>> connections = new ArrayList<>(nodes.size());
        try {
            for (RedisURI uri : nodes) {
                connections.add(client.connect(StringCodec.UTF8, uri));
            }
        } catch (RuntimeException e) {
            connections.forEach(StatefulRedisConnection::closeAsync);
            client.shutdownAsync();
            throw e;
        }
        return new RedlockLock(connections, client, options, redlock);
    }

    private static void checkNodes(List<RedisURI> nodes) {
        Objects.requireNonNull(nodes, "nodes");
        if (nodes.size() < 3) {
            throw new IllegalArgumentException("Redlock needs at least 3 nodes, got " + nodes.size());
        }
        if (nodes.size() % 2 == 0) {
            throw new IllegalArgumentException("Redlock needs an odd number of nodes (one more node than an odd "
                    + "number tolerates no more failures), got " + nodes.size());
        }
        Set<String> seen = new HashSet<>();
        for (RedisURI uri : nodes) {
            Objects.requireNonNull(uri, "nodes must not contain null");
            String id = identity(uri);
            if (!seen.add(id)) {
                throw new IllegalArgumentException("Redlock nodes must be distinct servers, but " + id + " is given twice");
            }
        }
    }

    /** The server a URI reaches, for duplicate checks and messages. */
    private static String identity(RedisURI uri) {
        if (uri.getSocket() != null) {
            return uri.getSocket();
        }
        if (!uri.getSentinels().isEmpty()) {
            return "sentinel master " + uri.getSentinelMasterId() + " at " + uri.getSentinels().stream()
                    .map(RedlockLock::identity).sorted().collect(Collectors.joining(","));
        }
        return String.valueOf(uri.getHost()).toLowerCase(Locale.ROOT) + ":" + uri.getPort();
    }

    /** The options this lock was created with. */
    public LockOptions options() {
        return options;
    }

    /** The Redlock settings this lock was created with. */
    public RedlockOptions redlockOptions() {
        return redlock;
    }

    /**
     * {@inheritDoc}
     *
     * <p>Besides the common checks, {@code ttl} must exceed the node timeout plus the drift
     * allowance, or no acquisition could ever be valid.
     */
    @Override
    public <T> Mono<T> withLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
        Arguments.checkCall(name, ttl, body, options, listener, () -> {
            if (ttl.toNanos() <= redlock.nodeTimeout().toNanos() + redlock.driftNanos(ttl)) {
                throw new IllegalArgumentException("ttl (" + ttl + ") must exceed the node timeout (" + redlock.nodeTimeout()
                        + ") plus the clock drift allowance (" + Duration.ofNanos(redlock.driftNanos(ttl)) + ")");
            }
        });
        String lockKey = keys.lockKey(name);
        return Mono.defer(() -> {
            if (closed.get()) {
                IllegalStateException error = new IllegalStateException("lock '" + name + "' requested after close()");
                listener.acquireFailed(name, error, Duration.ZERO);
                return Mono.error(error);
            }
            Session session = new Session(name, lockKey, ttl);
            return Mono.usingWhen(session.acquire(), lease -> session.run(lease, body),
                            lease -> session.release(null), (lease, error) -> session.release(error),
                            lease -> session.release(null))
                    .doFinally(signal -> session.finish());
        });
    }

    /**
     * Closes the connections and the client, without blocking. Locks requested afterwards fail;
     * locks held stay until released or expired.
     */
    public Mono<Void> closeAsync() {
        return Mono.defer(() -> {
            if (!closed.compareAndSet(false, true)) {
                return Mono.empty();
            }
            // The connections finish closing on the client's event loop; shutting the client down
            // from there would block that loop, so hop off it first.
            return Mono.fromCompletionStage(CompletableFuture
                    .allOf(connections.stream().map(StatefulRedisConnection::closeAsync).toArray(CompletableFuture[]::new))
                    .thenComposeAsync(done -> client.shutdownAsync(), task -> Schedulers.boundedElastic().schedule(task)))
                    .then();
        });
    }

    /** Blocking {@link #closeAsync()}, for shutdown code. */
    @Override
    public void close() {
        closeAsync().block();
    }

    private static CompletableFuture<Long> send(ScriptExecutor node, LuaScript script, String[] keys, String... args) {
        try {
            return node.run(script, keys, args).toCompletableFuture();
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** One node's reply to one command: an integer, or the error (a timeout included). */
    private record Reply(long value, @Nullable Throwable error) {
        Reply(Long value) {
            this(value, null);
        }

        Reply(Throwable error) {
            this(0, error);
        }
    }

    /**
     * The replies to one command sent to every node, counted as they arrive: a positive integer
     * is a yes, zero a no, an error or no reply within the node timeout a failure.
     */
    private final class Round {
        private int yes;
        private int no;
        private int failed;
        private @Nullable Throwable lastError;

        void add(Reply reply) {
            Throwable error = reply.error();
            if (error != null) {
                failed++;
                lastError = ScriptExecutor.unwrap(error);
            } else if (reply.value() > 0) {
                yes++;
            } else {
                no++;
            }
        }

        /** Counts the nodes that did not answer in time as failed, unless the round had enough. */
        Round end(int sent, Predicate<Round> enough) {
            int silent = sent - yes - no - failed;
            if (silent > 0 && !enough.test(this)) {
                failed += silent;
                if (lastError == null) {
                    lastError = new TimeoutException("no reply within " + redlock.nodeTimeout().toMillis() + " ms");
                }
            }
            return this;
        }

        boolean hasMajority() {
            return yes >= quorum;
        }

        /** Whether a majority answered, whatever they said. */
        boolean majorityAnswered() {
            return yes + no >= quorum;
        }

        /** Whether the no's alone rule out a majority, whatever the failed nodes would have said. */
        boolean majorityRefused() {
            return no > nodes.size() - quorum;
        }

        /** E.g. "2 of 5 nodes, needed 3 (1 held by another token, 2 failed or did not answer in time)". */
        String count(String refusal) {
            StringBuilder s = new StringBuilder().append(yes).append(" of ").append(nodes.size())
                    .append(" nodes, needed ").append(quorum);
            if (no > 0 || failed > 0) {
                s.append(" (");
                if (no > 0) {
                    s.append(no).append(' ').append(refusal).append(failed > 0 ? ", " : "");
                }
                if (failed > 0) {
                    s.append(failed).append(" failed or did not answer within ").append(redlock.nodeTimeout().toMillis())
                            .append(" ms");
                }
                s.append(')');
            }
            return s.toString();
        }
    }

    /** The signal between a round without a majority and the retry that handles it. */
    private static final class NoMajority extends RuntimeException {
        private static final long serialVersionUID = 1L;
        static final NoMajority INSTANCE = new NoMajority();

        private NoMajority() {
            super("no majority", null, false, false);
        }
    }

    /**
     * One subscription of {@code withLock}, with the state machine of the single lock's session:
     * ACQUIRING moves once to HELD (the body may run) or to DONE (the subscription ended first).
     * Whoever leaves HELD releases on every node; {@link #finish()} releases on every node when
     * leaving ACQUIRING after any attempt was sent; a grant that arrives after DONE is released on
     * its node. A node runs one connection's commands in order, so a release sent after an
     * acquire that was abandoned on a slow node still reaches that node after it.
     */
    private final class Session {
        private final String name;
        private final String[] lockKeys;
        private final String[] acquireKeys;
        private final String[] acquireArgs;
        private final String[] releaseArgs;
        private final String token = Tokens.next();
        private final String ttlMillis;
        private final long ttlNanos;
        private final long driftNanos;
        private final Scheduler scheduler = options.scheduler();
        private final long startNanos = System.nanoTime();
        private final AtomicInteger state = new AtomicInteger(ACQUIRING);
        private final AtomicInteger attempts = new AtomicInteger();
        private volatile long heldSinceNanos;
        private volatile @Nullable String lastShortfall;
        private volatile @Nullable Throwable lastError;
        private volatile @Nullable Round lastRenewal;

        Session(String name, String lockKey, Duration ttl) {
            this.name = name;
            this.ttlNanos = ttl.toNanos();
            this.ttlMillis = Long.toString(ttl.toMillis());
            this.driftNanos = redlock.driftNanos(ttl);
            this.lockKeys = new String[] {lockKey};
            // The acquire script also keeps a per-node fencing record; Redlock does not use it, so it
            // lives no longer than the lease.
            this.acquireKeys = new String[] {lockKey, LockKeys.fenceKey(lockKey)};
            this.acquireArgs = new String[] {token, ttlMillis, ttlMillis};
            this.releaseArgs = new String[] {token, LockKeys.releaseChannel(lockKey)};
        }

        Mono<LockLease> acquire() {
            Mono<LockLease> once = Mono.defer(this::attempt);
            if (options.acquireTimeout().isZero()) {
                return once.onErrorMap(this::acquisitionFailure);
            }
            return once.retryWhen(Retry.from(signals -> signals.concatMap(signal -> signal.failure() == NoMajority.INSTANCE
                            ? Mono.delay(backoff.step(signal.totalRetriesInARow()), scheduler).thenReturn(signal)
                            : Mono.error(signal.failure()))))
                    .timeout(options.acquireTimeout(), scheduler)
                    .onErrorMap(this::acquisitionFailure);
        }

        private Mono<LockLease> attempt() {
            attempts.incrementAndGet();
            long sentAt = System.nanoTime();
            List<CompletableFuture<Long>> replies = new ArrayList<>(nodes.size());
            for (ScriptExecutor node : nodes) {
                // Checked before the reply counts towards a majority: a grant seen after this session
                // ended is released on that node, whether the session never held the lock or already
                // sent its release there (a NOSCRIPT fallback lets that release run before the grant).
                replies.add(send(node, LockScripts.ACQUIRE, acquireKeys, acquireArgs).whenComplete((fence, error) -> {
                    if (fence != null && fence > 0 && state.get() == DONE) {
                        releaseInBackground(List.of(node), "a grant that arrived after the acquisition ended");
                    }
                }));
            }
            return collect(replies, Round::hasMajority).flatMap(round -> {
                long validUntil = sentAt + ttlNanos - driftNanos;
                if (round.hasMajority() && validUntil - System.nanoTime() > 0) {
                    lastShortfall = null;
                    lastError = null;
                    return Mono.just(Leases.create(name, token, LockLease.NO_FENCING_TOKEN, validUntil));
                }
                lastShortfall = round.hasMajority()
                        ? "it got " + round.count("held by another token") + " but no validity was left of the "
                                + Duration.ofNanos(ttlNanos).toMillis() + " ms lease"
                        : "it got " + round.count("held by another token");
                lastError = round.lastError;
                releaseInBackground(nodes, "a failed attempt");
                return Mono.error(NoMajority.INSTANCE);
            });
        }

        /**
         * Counts the replies as they arrive, until the round has {@code enough}, every node
         * answered, or the node timeout passed (the commands were sent together, so one deadline
         * serves every node); a node silent by then counts as failed. The commands themselves are
         * never cancelled: a node that answers later still runs them, in order.
         */
        private Mono<Round> collect(List<CompletableFuture<Long>> replies, Predicate<Round> enough) {
            return Mono.defer(() -> {
                Round round = new Round();
                return Flux.fromIterable(replies)
                        .flatMap(reply -> Mono.fromFuture(reply, true)
                                .map(Reply::new)
                                .onErrorResume(error -> Mono.just(new Reply(error))))
                        .doOnNext(round::add) // after flatMap: replies are counted one at a time
                        .takeUntil(reply -> enough.test(round))
                        .take(redlock.nodeTimeout(), scheduler)
                        .then(Mono.fromCallable(() -> round.end(replies.size(), enough)));
            });
        }

        private Throwable acquisitionFailure(Throwable error) {
            Duration waited = Duration.ofNanos(System.nanoTime() - startNanos);
            String shortfall = lastShortfall;
            LockAcquisitionException failure = (error == NoMajority.INSTANCE || error instanceof TimeoutException)
                            && shortfall != null
                    ? new LockAcquisitionException(name, attempts.get(), waited, shortfall, lastError)
                    : new LockAcquisitionException(name, attempts.get(), waited, ScriptExecutor.unwrap(error));
            listener.acquireFailed(name, failure, waited);
            return failure;
        }

        <T> Mono<T> run(LockLease lease, Function<? super LockLease, ? extends Mono<T>> body) {
            if (!state.compareAndSet(ACQUIRING, HELD)) {
                return Mono.empty(); // the subscriber left while the grant was in flight; finish() released it
            }
            heldSinceNanos = System.nanoTime();
            listener.acquired(name, Duration.ofNanos(heldSinceNanos - startNanos));
            Mono<T> work = Mono.defer(() -> Objects.requireNonNull(body.apply(lease), "the body function returned null"));
            return Mono.firstWithSignal(work, watchdog(lease));
        }

        /** Never emits; fails when the majority is lost or the maximum lease time is reached. */
        private <T> Mono<T> watchdog(LockLease lease) {
            return Watchdog.watch(name, Duration.ofNanos(ttlNanos), options, scheduler, listener, every -> renew(lease, every));
        }

        private Mono<Void> renew(LockLease lease, Duration every) {
            Mono<Void> once = Mono.defer(() -> {
                long sentAt = System.nanoTime();
                List<CompletableFuture<Long>> replies = new ArrayList<>(nodes.size());
                for (ScriptExecutor node : nodes) {
                    replies.add(send(node, LockScripts.RENEW, lockKeys, token, ttlMillis));
                }
                return collect(replies, Round::hasMajority).flatMap(round -> {
                    if (round.hasMajority()) {
                        Leases.extendTo(lease, sentAt + ttlNanos - driftNanos);
                        listener.renewed(name);
                        return Mono.empty();
                    }
                    if (round.majorityRefused()) {
                        return Mono.error(new LockLostException(name, "renewal kept it on only "
                                + round.count("no longer held by this token"), round.lastError));
                    }
                    lastRenewal = round;
                    return Mono.error(NoMajority.INSTANCE);
                });
            });
            return Watchdog.renewWhileValid(name, lease, every, options, scheduler, once, e -> e == NoMajority.INSTANCE,
                    () -> {
                        Round last = lastRenewal;
                        return new LockLostException(name, "could not renew it on a majority before the lease ran out"
                                + (last == null ? "" : "; the last renewal kept it on " + last.count("no longer held by this token")),
                                last == null ? null : last.lastError);
                    });
        }

        /**
         * Releases on every node, once, for the path that leaves HELD. Never fails and never
         * replaces the body's outcome; unless a majority answered, the lease is left to expire.
         */
        Mono<Void> release(@Nullable Throwable bodyError) {
            if (!state.compareAndSet(HELD, DONE)) {
                return Mono.empty();
            }
            listener.released(name, Duration.ofNanos(System.nanoTime() - heldSinceNanos));
            return releaseOn(nodes).doOnNext(round -> {
                if (!round.majorityAnswered()) {
                    Throwable cause = round.lastError;
                    if (bodyError != null && cause != null) {
                        bodyError.addSuppressed(cause);
                    }
                    log.warn("Could not release lock '{}' on a majority: {}; it expires by its TTL",
                            name, round.count("not held"), cause);
                }
            }).then();
        }

        /** After the subscription ends: releases what an acquisition that never ran its body may hold. */
        void finish() {
            if (state.compareAndSet(ACQUIRING, DONE) && attempts.get() > 0) {
                releaseInBackground(nodes, "an abandoned acquisition");
            }
        }

        private void releaseInBackground(List<ScriptExecutor> on, String what) {
            releaseOn(on).subscribe(round -> {
                if (round.failed > 0) {
                    log.debug("Releasing lock '{}' after {} failed on {} node(s); it expires there by its TTL",
                            name, what, round.failed, round.lastError);
                }
            });
        }

        /**
         * Sends the release to the given nodes at once; completes when a majority answered (the
         * lock can then be taken again) or every node answered or timed out.
         */
        private Mono<Round> releaseOn(List<ScriptExecutor> on) {
            return Mono.defer(() -> {
                List<CompletableFuture<Long>> replies = new ArrayList<>(on.size());
                for (ScriptExecutor node : on) {
                    replies.add(send(node, LockScripts.RELEASE, lockKeys, releaseArgs));
                }
                return collect(replies, Round::majorityAnswered);
            });
        }
    }
}
