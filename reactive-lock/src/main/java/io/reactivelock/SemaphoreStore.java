package io.reactivelock;

import io.reactivelock.internal.Backoff;
import io.reactivelock.internal.Lease;
import io.reactivelock.internal.LockCore;
import io.reactivelock.internal.LockKeys;
import io.reactivelock.internal.LockStore;
import io.reactivelock.internal.LuaScript;
import io.reactivelock.internal.PrimitiveScripts;
import io.reactivelock.internal.RedisErrors;
import io.reactivelock.internal.ReleaseNotices;
import io.reactivelock.internal.ScriptExecutor;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;

/**
 * The leased semaphore on one Redis deployment. The holders of a name are one lease set (see
 * {@link PrimitiveScripts}), {@code <prefix>:{<name>}:permits}, with a member {@code "<n>:<token>"}
 * per holder, so a dead holder's permits come back by its TTL. A release announces itself on the
 * key's release channel, which wakes one waiter of this process at once; the others poll with backoff.
 */
final class SemaphoreStore implements LockStore<SemaphoreStore.Call> {

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
        return scripts.run(PrimitiveScripts.SEMAPHORE_ACQUIRE, call.keys, call.member, call.ttlMillis, call.n, call.capacity)
                .thenApply(held -> held == 1 ? Reply.granted(LockLease.NO_FENCING_TOKEN, validFor) : Reply.busy());
    }

    @Override
    public Mono<Void> renew(Call call, Lease lease) {
        long sentAt = System.nanoTime();
        return command(PrimitiveScripts.LEASE_RENEW, call.keys, call.member, call.ttlMillis).flatMap(renewed -> {
            if (renewed == 1) {
                lease.extendTo(sentAt + call.acquisition.ttl().toNanos());
                return Mono.empty();
            }
            return Mono.error(new LockLostException(call.acquisition.name(), "its permits expired", null));
        });
    }

    @Override
    public Mono<Void> release(Call call) {
        return Mono.defer(() -> command(PrimitiveScripts.LEASE_RELEASE, call.keys, call.member, call.channel))
                .retryWhen(Retry.backoff(3, options.minBackoff()).scheduler(options.scheduler())
                        .filter(RedisErrors::isTransient))
                .then();
    }

    @Override
    public CompletionStage<?> releaseAbandoned(Call call) {
        return scripts.run(PrimitiveScripts.LEASE_RELEASE, call.keys, call.member, call.channel);
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
