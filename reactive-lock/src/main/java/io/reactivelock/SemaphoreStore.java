package io.reactivelock;

import io.reactivelock.internal.Backoff;
import io.reactivelock.internal.Lease;
import io.reactivelock.internal.LockCore;
import io.reactivelock.internal.LockKeys;
import io.reactivelock.internal.LockStore;
import io.reactivelock.internal.LuaScript;
import io.reactivelock.internal.RedisErrors;
import io.reactivelock.internal.ReleaseNotices;
import io.reactivelock.internal.ScriptExecutor;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;

/**
 * The leased semaphore on one Redis deployment. The holders of a name are one sorted set,
 * {@code <prefix>:{<name>}:permits}: a member {@code "<n>:<token>"} per holder, scored by the
 * server time (ms) at which its lease ends. Every script first drops the holders whose lease has
 * ended, so a dead holder's permits come back by its TTL; the key itself expires with the last
 * lease. A release announces itself on the key's release channel, which wakes one waiter of this
 * process at once; the others poll with backoff.
 */
final class SemaphoreStore implements LockStore<SemaphoreStore.Call> {

    /** Sets {@code now} to the server time in ms and drops the holders whose lease ended by then. */
    private static final String DROP_EXPIRED = """
            local t = redis.call('TIME')
            local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
            """;

    /** Sets the caller's lease to end ARGV[2] ms from now, and the key's expiry to the last lease's end. */
    private static final String HOLD = """
            redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
            local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
            redis.call('PEXPIRE', KEYS[1], tonumber(last[2]) - now)
            return 1
            """;

    /**
     * KEYS: permits. ARGV: member, ttl ms, n, capacity. Returns 1 when the member holds its permits
     * (taken now, or already its own: a retried attempt), 0 when the live holders' permits plus n
     * exceed the capacity.
     */
    static final LuaScript ACQUIRE = LuaScript.of(DROP_EXPIRED + """
            if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
              local used = 0
              for _, holder in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
                used = used + tonumber(string.match(holder, '^%d+'))
              end
              if used + tonumber(ARGV[3]) > tonumber(ARGV[4]) then return 0 end
            end
            """ + HOLD);

    /** KEYS: permits. ARGV: member, ttl ms. Extends the member's lease if it is still live; returns 1 if so. */
    static final LuaScript RENEW = LuaScript.of(DROP_EXPIRED + """
            if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
            """ + HOLD);

    /** KEYS: permits. ARGV: member, release channel. Gives the member's permits back and announces it; returns 1 if it held them. */
    static final LuaScript RELEASE = LuaScript.of("""
            if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
            redis.call('PUBLISH', ARGV[2], '')
            return 1
            """);

    private final LockOptions options;
    private final LockKeys keys;
    private final ScriptExecutor scripts;
    private final ReleaseNotices<Call> notices;
    private final Backoff backoff;

    SemaphoreStore(LockOptions options, ScriptExecutor scripts, ReleaseNotices<Call> notices) {
        this.options = options;
        this.keys = new LockKeys(options.keyPrefix());
        this.scripts = scripts;
        this.notices = notices;
        this.backoff = new Backoff(options.minBackoff(), options.maxBackoff(), options.jitter());
    }

    /** The key holding the permits of {@code name}; in the same hash slot as the name's lock key. */
    String permitsKey(String name) {
        return keys.lockKey(name) + ":permits";
    }

    /** One acquisition: its key, its member, and the permits it asks for against which capacity. */
    static final class Call {
        final LockCore<Call>.Acquisition acquisition;
        final String[] keys;
        final String member;
        final String ttlMillis;
        final String n;
        final String capacity;
        final String channel;
        volatile ReleaseNotices.@Nullable Waiter<Call> waiter;

        Call(LockCore<Call>.Acquisition acquisition, String key, int capacity, int n) {
            this.acquisition = acquisition;
            this.keys = new String[] {key};
            this.member = n + ":" + acquisition.token();
            this.ttlMillis = Long.toString(acquisition.ttl().toMillis());
            this.n = Integer.toString(n);
            this.capacity = Integer.toString(capacity);
            this.channel = LockKeys.releaseChannel(key);
        }
    }

    /** The state of an acquisition of {@code n} of {@code capacity} permits. */
    Call open(LockCore<Call>.Acquisition acquisition, int capacity, int n) {
        return new Call(acquisition, permitsKey(acquisition.name()), capacity, n);
    }

    /** Every call gives its permits: {@link #open(LockCore.Acquisition, int, int)} is used instead. */
    @Override
    public Call open(LockCore<Call>.Acquisition acquisition) {
        throw new UnsupportedOperationException("a semaphore acquisition needs its capacity and permits");
    }

    @Override
    public CompletionStage<Reply> acquire(Call call) {
        long validFor = call.acquisition.ttl().toNanos();
        return scripts.run(ACQUIRE, call.keys, call.member, call.ttlMillis, call.n, call.capacity)
                .thenApply(held -> held == 1 ? Reply.granted(LockLease.NO_FENCING_TOKEN, validFor) : Reply.busy());
    }

    @Override
    public Mono<Void> renew(Call call, Lease lease) {
        long sentAt = System.nanoTime();
        return command(RENEW, call.keys, call.member, call.ttlMillis).flatMap(renewed -> {
            if (renewed == 1) {
                lease.extendTo(sentAt + call.acquisition.ttl().toNanos());
                return Mono.empty();
            }
            return Mono.error(new LockLostException(call.acquisition.name(), "its permits expired", null));
        });
    }

    @Override
    public Mono<Void> release(Call call) {
        return Mono.defer(() -> command(RELEASE, call.keys, call.member, call.channel))
                .retryWhen(Retry.backoff(3, options.minBackoff()).scheduler(options.scheduler())
                        .filter(RedisErrors::isTransient))
                .then();
    }

    @Override
    public CompletionStage<?> releaseAbandoned(Call call) {
        return scripts.run(RELEASE, call.keys, call.member, call.channel);
    }

    @Override
    public boolean isTransient(Throwable error) {
        return RedisErrors.isTransient(error);
    }

    /**
     * Backoff, or until a release notice wakes the caller. A notice wakes one waiter of this
     * process, whose permits may not fit what was released, so the backoff steps stay short.
     */
    @Override
    public Duration pause(Call call, long retry) {
        if (call.waiter == null) {
            call.waiter = notices.join(call.channel, call.acquisition);
            if (call.acquisition.isDone()) {
                stopWaiting(call); // the acquisition ended while it was joining
            }
        }
        return backoff.step(retry);
    }

    @Override
    public void stopWaiting(Call call) {
        ReleaseNotices.Waiter<Call> w = call.waiter;
        if (w != null) {
            w.leave();
        }
    }

    private Mono<Long> command(LuaScript script, String[] keys, String... args) {
        return Mono.fromCompletionStage(() -> scripts.run(script, keys, args))
                .timeout(options.commandTimeout(), options.scheduler());
    }

    @Override
    public String toString() {
        return "SemaphoreStore{" + options + "}";
    }
}
