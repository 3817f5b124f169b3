package io.reactivelock.redis;

import io.reactivelock.inspect.LockInspector;
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
import io.reactivelock.spi.Arguments;
import io.reactivelock.spi.SafeLockListener;
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
import io.reactivelock.inspect.LockPage;
import io.reactivelock.inspect.LockState;

/**
 * The {@link LockInspector} of a {@link ReactiveRedisLock}, on its command connection. It reads
 * with {@code SCAN}, {@code GET}, {@code PTTL}, {@code LRANGE}, {@code LLEN}, {@code ZCARD},
 * {@code HMGET}, {@code ZCOUNT}, {@code ZRANGEBYSCORE} and {@code TIME}.
 */
final class RedisLockInspector implements LockInspector {

    private static final Logger log = Loggers.getLogger(LockInspector.class);

    /** KEYS: lock. ARGV: the first 8 characters of the holder's token. Deletes the lock if they still match. */
    private static final String FORCE_RELEASE = """
            local holder = redis.call('GET', KEYS[1])
            if holder and string.sub(holder, 1, 8) == ARGV[1] then
              return redis.call('DEL', KEYS[1])
            end
            return 0
            """;

    private final LockOptions options;
    private final boolean forceReleaseEnabled;
    private final LockKeys keys;
    private final LockKeyNames names;
    private final Deployment redis;
    private final LockListener listener;

    RedisLockInspector(LockOptions options, Deployment redis, boolean forceReleaseEnabled) {
        this.options = options;
        this.forceReleaseEnabled = forceReleaseEnabled;
        this.keys = new LockKeys(options.keyPrefix());
        this.names = new LockKeyNames(options.keyPrefix());
        this.redis = redis;
        this.listener = SafeLockListener.of(options.listener());
    }

    @Override
    public LockInspector withForceReleaseEnabled() {
        return new RedisLockInspector(options, redis, true);
    }

    @Override
    public boolean forceReleaseEnabled() {
        return forceReleaseEnabled;
    }

    @Override
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

    @Override
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

    @Override
    public Mono<Boolean> forceRelease(String name, String holder) {
        Arguments.checkName(name);
        Objects.requireNonNull(holder, "holder");
        if (!forceReleaseEnabled) {
            throw new IllegalStateException("force-release is disabled: use inspector().withForceReleaseEnabled()");
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

    private <T> Mono<T> call(Supplier<? extends CompletionStage<? extends T>> command) {
        return Mono.<T>fromCompletionStage(command).timeout(options.commandTimeout(), options.scheduler());
    }

}
