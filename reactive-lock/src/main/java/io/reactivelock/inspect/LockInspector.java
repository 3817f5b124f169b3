package io.reactivelock.inspect;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.LockListener;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.internal.Arguments;
import io.reactivelock.internal.LockKeys;
import io.reactivelock.internal.SafeLockListener;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.util.Logger;
import reactor.util.Loggers;

/**
 * Shows what the locks of a key prefix look like in Redis, for operators: which names are held
 * ({@link #page}, {@link #names}) as a lock, a semaphore or a read-write lock, and, for one name
 * ({@link #inspect}), the holder, what is left of its lease, the fencing token and the fair line,
 * the semaphore's holders and permits, and the read-write lock's writer, readers and waiting
 * writers.
 *
 * <pre>{@code
 * LockInspector inspector = LockInspector.create(redisClient, InspectorOptions.of(lockOptions));
 * inspector.names().flatMap(inspector::inspect).subscribe(state -> log.info("{}", state));
 * }</pre>
 *
 * <p>It only reads ({@code SCAN}, {@code GET}, {@code PTTL}, {@code LRANGE}, {@code LLEN},
 * {@code ZCARD}, {@code HMGET}, {@code ZCOUNT}, {@code ZRANGEBYSCORE}, {@code TIME}) and never
 * blocks. Listing uses {@code SCAN} with a bounded {@code COUNT}, never {@code KEYS}, on every
 * master of a Cluster. Holders' tokens are shown abbreviated to their first 8 characters: the
 * whole token is what releases the lock.
 *
 * <p>The one exception is {@link #forceRelease}, an administrative operation that must be enabled
 * explicitly ({@link InspectorOptions#withForceReleaseEnabled()}).
 *
 * <p>An inspector made from a {@link RedisURI} owns its client and connection; one made from a
 * client owns the connection it opens; one made from a connection owns nothing.
 * {@link #closeAsync()} closes what it owns.
 */
public final class LockInspector implements AutoCloseable {

    private static final Logger log = Loggers.getLogger(LockInspector.class);

    /** How many waiters of a fair line {@link #inspect} lists one by one. */
    public static final int MAX_WAITERS_LISTED = 100;
    /** The largest {@code count} of {@link #page}. */
    public static final int MAX_PAGE_SIZE = 1000;
    /** The {@code count} with which {@link #names} pages. */
    public static final int DEFAULT_PAGE_SIZE = 250;

    /** KEYS: lock. ARGV: the first 8 characters of the holder's token. Deletes the lock if they still match. */
    private static final String FORCE_RELEASE = """
            local holder = redis.call('GET', KEYS[1])
            if holder and string.sub(holder, 1, 8) == ARGV[1] then
              return redis.call('DEL', KEYS[1])
            end
            return 0
            """;

    private final InspectorOptions options;
    private final LockKeys keys;
    private final LockKeyNames names;
    private final Deployment redis;
    private final LockListener listener;
    private final Supplier<CompletionStage<?>> closeResources;
    private final AtomicBoolean closed = new AtomicBoolean();

    private LockInspector(InspectorOptions options, Deployment redis, Supplier<CompletionStage<?>> closeResources) {
        this.options = Objects.requireNonNull(options, "options");
        String prefix = options.lockOptions().keyPrefix();
        this.keys = new LockKeys(prefix);
        this.names = new LockKeyNames(prefix);
        this.redis = redis;
        this.listener = SafeLockListener.of(options.lockOptions().listener());
        this.closeResources = closeResources;
    }

    /**
     * Creates a client for {@code uri} (standalone or Sentinel) and one connection, both owned by
     * this inspector. Connecting blocks: call it at start-up.
     */
    public static LockInspector create(RedisURI uri, InspectorOptions options) {
        Objects.requireNonNull(uri, "uri");
        Objects.requireNonNull(options, "options");
        RedisClient client = RedisClient.create(uri);
        client.setOptions(ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .build());
        try {
            StatefulRedisConnection<String, String> connection = client.connect(StringCodec.UTF8);
            // The connection finishes closing on the client's event loop; shut the client down from
            // another thread, since shutting it down waits for that loop.
            return new LockInspector(options, new Deployment.Single(connection),
                    () -> connection.closeAsync().thenComposeAsync(done -> client.shutdownAsync(),
                            task -> Schedulers.boundedElastic().schedule(task)));
        } catch (RuntimeException e) {
            client.shutdownAsync();
            throw e;
        }
    }

    /**
     * Opens one connection from the caller's client, which must have a default {@link RedisURI};
     * the inspector closes that connection, not the client. Connecting blocks: call it at start-up.
     */
    public static LockInspector create(RedisClient client, InspectorOptions options) {
        Objects.requireNonNull(client, "client");
        Objects.requireNonNull(options, "options");
        StatefulRedisConnection<String, String> connection = client.connect(StringCodec.UTF8);
        return new LockInspector(options, new Deployment.Single(connection), connection::closeAsync);
    }

    /** Uses the caller's connection, which it never closes. */
    public static LockInspector create(StatefulRedisConnection<String, String> connection, InspectorOptions options) {
        Objects.requireNonNull(connection, "connection");
        return new LockInspector(options, new Deployment.Single(connection), LockInspector::nothing);
    }

    /**
     * Opens one Cluster connection from the caller's client; the inspector closes that connection,
     * not the client. Connecting blocks: call it at start-up.
     */
    public static LockInspector create(RedisClusterClient client, InspectorOptions options) {
        Objects.requireNonNull(client, "client");
        Objects.requireNonNull(options, "options");
        StatefulRedisClusterConnection<String, String> connection = client.connect(StringCodec.UTF8);
        return new LockInspector(options, new Deployment.Cluster(connection), connection::closeAsync);
    }

    /** Uses the caller's Cluster connection, which it never closes. */
    public static LockInspector create(StatefulRedisClusterConnection<String, String> connection,
            InspectorOptions options) {
        Objects.requireNonNull(connection, "connection");
        return new LockInspector(options, new Deployment.Cluster(connection), LockInspector::nothing);
    }

    private static CompletionStage<?> nothing() {
        return CompletableFuture.completedFuture(null);
    }

    /** The options this inspector was created with. */
    public InspectorOptions options() {
        return options;
    }

    /**
     * One page of the names held now ({@link LockState#inUse()}: as a lock, permits of a semaphore,
     * or a read-write lock by a writer or readers): one {@code SCAN} step of {@code count} keys (a
     * hint to Redis, at most {@value #MAX_PAGE_SIZE}), on one master of a Cluster. Pass the page's
     * {@link LockPage#cursor() cursor} back for the next page, {@code null} for the first one. As
     * with {@code SCAN}, a name held from the first page to the last is listed, a page may be
     * empty before the last one, and a name may be listed on two pages: once per page at most,
     * but a name held by two primitives has two keys, which may come in different steps.
     *
     * @throws IllegalArgumentException for a {@code count} out of range or a cursor this kind of
     *     inspector did not return
     */
    public Mono<LockPage> page(@Nullable String cursor, int count) {
        if (count < 1 || count > MAX_PAGE_SIZE) {
            throw new IllegalArgumentException("count must be 1 to " + MAX_PAGE_SIZE + ", got " + count);
        }
        if (cursor != null) {
            redis.checkCursor(cursor);
        }
        ScanArgs args = ScanArgs.Builder.matches(names.pattern()).limit(count);
        return call(() -> redis.scan(cursor, args))
                .map(step -> {
                    Set<String> found = new LinkedHashSet<>();
                    for (String key : step.keys()) {
                        String name = names.nameOf(key);
                        if (name != null) {
                            found.add(name);
                        }
                    }
                    return new LockPage(List.copyOf(found), step.cursor());
                });
    }

    /**
     * The names held, page after page of {@value #DEFAULT_PAGE_SIZE}, as requested; each name once
     * (the flux keeps the names it emitted until it ends).
     */
    public Flux<String> names() {
        return page(null, DEFAULT_PAGE_SIZE)
                .expand(page -> page.last() ? Mono.empty() : page(page.cursor(), DEFAULT_PAGE_SIZE))
                .concatMapIterable(LockPage::names)
                .distinct();
    }

    /**
     * What Redis holds for {@code name} now: its lock (free or held, the holder abbreviated, the
     * lease left, the last fencing token, how many wait: the fair line, or a non-fair lock's
     * waiters registered to be woken, and the fair line itself), and, where the name is in use as
     * one, its semaphore's live holders and its read-write lock's writer, readers and waiting
     * writers. One round trip, and a second one only for what the first found: a fair line, or
     * holders of the semaphore or the read-write lock.
     *
     * @throws IllegalArgumentException for a name {@code withLock} would refuse
     */
    public Mono<LockState> inspect(String name) {
        Arguments.checkName(name);
        String key = keys.lockKey(name);
        return Mono.defer(() -> {
            NameReads reads = new NameReads(redis, name, key);
            return call(reads::first)
                    .then(Mono.defer(() -> {
                        CompletableFuture<Void> second = reads.second();
                        return second == null ? Mono.<Void>empty() : call(() -> second);
                    }))
                    .then(Mono.fromSupplier(reads::state));
        });
    }

    /**
     * Administrative: deletes lock {@code name} if its holder's token still starts with
     * {@code holder} (the 8 characters {@link #inspect} showed), so that a newer holder is not
     * removed (unless its token starts with the same 8 characters: one chance in 2<sup>32</sup>). Emits whether it deleted the lock. The holder is not told at once: it finds the lock
     * gone at its next renewal ({@link LockLostException}) and its body may run until then.
     * Waiters get the lock at their next attempt.
     *
     * <p>A forced release is logged and reported to the options' listener as
     * {@link LockListener#lost lost}: the holder's lease ended against its will. ({@code released}
     * would be wrong: it means the holder let go, and metrics count it as one holder fewer in this
     * process.) The holder's own process reports its loss too, when it notices.
     *
     * <p>Needs {@code EVAL} (with {@code GET} and {@code DEL} inside), beyond the read-only commands.
     *
     * @throws IllegalStateException unless the inspector was created with
     *     {@link InspectorOptions#withForceReleaseEnabled()}
     */
    public Mono<Boolean> forceRelease(String name, String holder) {
        Arguments.checkName(name);
        Objects.requireNonNull(holder, "holder");
        if (!options.forceReleaseEnabled()) {
            throw new IllegalStateException("force-release is disabled: create the inspector with "
                    + "InspectorOptions.withForceReleaseEnabled()");
        }
        String key = keys.lockKey(name);
        return call(() -> redis.commands().<Long>eval(FORCE_RELEASE, ScriptOutputType.INTEGER, new String[] {key}, holder))
                .map(deleted -> deleted == 1)
                .doOnNext(deleted -> {
                    if (deleted) {
                        log.warn("Force-released lock '{}' held by {}", name, holder);
                        listener.lost(name, new LockLostException(name, "force-released by an operator (holder " + holder + ")", null));
                    }
                });
    }

    /** Closes what this inspector owns, without blocking. */
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

    private <T> Mono<T> call(Supplier<? extends CompletionStage<? extends T>> command) {
        LockOptions lockOptions = options.lockOptions();
        return Mono.<T>fromCompletionStage(command).timeout(lockOptions.commandTimeout(), lockOptions.scheduler());
    }

}
