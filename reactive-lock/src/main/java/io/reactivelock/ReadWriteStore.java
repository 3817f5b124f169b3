package io.reactivelock;

import io.reactivelock.internal.Backoff;
import io.reactivelock.internal.Lease;
import io.reactivelock.internal.LockCore;
import io.reactivelock.internal.LockKeys;
import io.reactivelock.internal.LockScripts;
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
 * The read-write lock on one Redis deployment; its keys share the name's hash slot:
 * <ul>
 *   <li>{@code <prefix>:{<name>}:rw:writer}: the writer's token, with the lease as its TTL (as the
 *       single lock's key), and {@code ...:writer:fence}, the writers' fencing record;
 *   <li>{@code ...:rw:readers}: the readers, a lease set of tokens (see {@link PrimitiveScripts}),
 *       so that each reader's lease ends on its own;
 *   <li>{@code ...:rw:writers-waiting}: the writers waiting, a lease set scored by their waiter
 *       lease: while it has a live member, new readers are refused (writer preference).
 * </ul>
 * A release announces itself on {@code ...:rw:released}, which wakes one waiter of this process at
 * once; the others poll with backoff.
 */
final class ReadWriteStore implements LockStore<ReadWriteStore.Call> {

    private final LockOptions options;
    private final LockKeys keys;
    private final ScriptExecutor scripts;
    private final ReleaseNotices<Call> notices;
    private final Backoff backoff;
    private final String waiterLease;

    ReadWriteStore(LockOptions options, ScriptExecutor scripts, ReleaseNotices<Call> notices) {
        this.options = options;
        this.keys = new LockKeys(options.keyPrefix());
        this.scripts = scripts;
        this.notices = notices;
        this.backoff = new Backoff(options.minBackoff(), options.maxBackoff(), options.jitter());
        this.waiterLease = Long.toString(options.waiterLease().toMillis());
    }

    /** One acquisition, for reading or for writing: its keys and script arguments. */
    static final class Call {
        final LockCore<Call>.Acquisition acquisition;
        final boolean write;
        final String ttlMillis;
        final String channel;
        final LuaScript acquire;
        final String[] acquireKeys;
        final String[] acquireArgs;
        final LuaScript renew;
        final String[] renewKeys;
        final LuaScript release;
        final String[] releaseKeys;
        volatile ReleaseNotices.@Nullable Waiter<Call> waiter;

        Call(LockCore<Call>.Acquisition a, boolean write, String rwKey, String waiterLease) {
            this.acquisition = a;
            this.write = write;
            this.ttlMillis = Long.toString(a.ttl().toMillis());
            this.channel = LockKeys.releaseChannel(rwKey);
            String writer = rwKey + ":writer";
            String readers = rwKey + ":readers";
            String waiting = rwKey + ":writers-waiting";
            if (write) {
                String fenceRetention = Long.toString(a.ttl().plus(RedisStore.FENCE_RETENTION).toMillis());
                acquire = PrimitiveScripts.WRITE_ACQUIRE;
                acquireKeys = new String[] {writer, LockKeys.fenceKey(writer), readers, waiting};
                acquireArgs = new String[] {a.token(), ttlMillis, fenceRetention, waiterLease};
                renew = LockScripts.RENEW;
                renewKeys = new String[] {writer};
                release = PrimitiveScripts.WRITE_RELEASE;
                releaseKeys = new String[] {writer, waiting};
            } else {
                acquire = PrimitiveScripts.READ_ACQUIRE;
                acquireKeys = new String[] {writer, readers, waiting};
                acquireArgs = new String[] {a.token(), ttlMillis};
                renew = PrimitiveScripts.LEASE_RENEW;
                renewKeys = new String[] {readers};
                release = PrimitiveScripts.LEASE_RELEASE;
                releaseKeys = new String[] {readers};
            }
        }
    }

    /** The state of an acquisition for writing or for reading. */
    Call open(LockCore<Call>.Acquisition acquisition, boolean write) {
        return new Call(acquisition, write, keys.lockKey(acquisition.name()) + ":rw", waiterLease);
    }

    /** Every call says whether it writes: {@link #open(LockCore.Acquisition, boolean)} is used instead. */
    @Override
    public Call open(LockCore<Call>.Acquisition acquisition) {
        throw new UnsupportedOperationException("a read-write lock acquisition reads or writes");
    }

    /** A writer's grant carries its fencing token; a reader's (1) carries none. */
    @Override
    public CompletionStage<Reply> acquire(Call call) {
        long validFor = call.acquisition.ttl().toNanos();
        return scripts.run(call.acquire, call.acquireKeys, call.acquireArgs).thenApply(result -> result == 0
                ? Reply.busy()
                : Reply.granted(call.write ? result : LockLease.NO_FENCING_TOKEN, validFor));
    }

    @Override
    public Mono<Void> renew(Call call, Lease lease) {
        long sentAt = System.nanoTime();
        return command(call.renew, call.renewKeys, call.acquisition.token(), call.ttlMillis).flatMap(renewed -> {
            if (renewed == 1) {
                lease.extendTo(sentAt + call.acquisition.ttl().toNanos());
                return Mono.empty();
            }
            return Mono.error(new LockLostException(call.acquisition.name(),
                    (call.write ? "its write lease" : "its read lease") + " expired or was taken", null));
        });
    }

    @Override
    public Mono<Void> release(Call call) {
        return Mono.defer(() -> command(call.release, call.releaseKeys, call.acquisition.token(), call.channel))
                .retryWhen(Retry.backoff(3, options.minBackoff()).scheduler(options.scheduler())
                        .filter(RedisErrors::isTransient))
                .then();
    }

    /** For a writer, also takes it out of the waiting writers, so that readers are not kept out. */
    @Override
    public CompletionStage<?> releaseAbandoned(Call call) {
        return scripts.run(call.release, call.releaseKeys, call.acquisition.token(), call.channel);
    }

    @Override
    public boolean isTransient(Throwable error) {
        return RedisErrors.isTransient(error);
    }

    /**
     * Backoff, or until a release notice wakes the caller. A notice wakes one waiter of this
     * process, and a release may let several readers in, so the backoff steps stay short; a
     * waiting writer's steps (at most the longest one) stay within its waiter lease.
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
        return "ReadWriteStore{" + options + "}";
    }
}
