package io.reactivelock.redis;

import io.reactivelock.spi.Lease;
import io.reactivelock.spi.LockStore;
import io.reactivelock.spi.Request;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;
import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;

/**
 * The store of the semaphore and the read-write lock on one Redis deployment. Each acquisition is
 * three scripts of {@link PrimitiveScripts} (acquire, renew, release) with their keys and
 * arguments, chosen by its kind; the keys of a name share its hash slot:
 * <ul>
 *   <li>a semaphore holder: {@code <prefix>:{<name>}:permits}, a lease set (see {@link PrimitiveScripts})
 *       with a member {@code "<n>:<token>"} per holder, so a dead holder's permits come back by its TTL;
 *   <li>a writer: {@code <prefix>:{<name>}:rw:writer}, its token with the lease as TTL (as the single
 *       lock's key), and {@code ...:writer:fence}, the writers' fencing record;
 *   <li>a reader: {@code ...:rw:readers}, a lease set of tokens, so that each reader's lease ends on its own;
 *   <li>a waiting writer: {@code ...:rw:writers-waiting}, a lease set scored by the waiter lease:
 *       while it has a live member, new readers are refused (writer preference).
 * </ul>
 * A release announces itself on the key's release channel, which wakes one waiter of this process
 * at once; the others poll with backoff.
 */
final class PrimitiveStore implements LockStore<PrimitiveStore.Call> {

    private final StoreContext redis;

    PrimitiveStore(StoreContext redis) {
        this.redis = redis;
    }

    /** A script with its keys and arguments. */
    record Command(LuaScript script, String[] keys, String... args) {}

    /**
     * One acquisition: its scripts, whether a grant's result is its fencing token (else a grant
     * is 1), and what a renewal that finds it gone says.
     */
    static final class Call {
        final Request request;
        final Command acquire;
        final boolean fenced;
        final Command renew;
        final Command release;
        final String lost;
        final String channel;
        volatile ReleaseNotices.@Nullable Member waiter;

        Call(Request request, Command acquire, boolean fenced, Command renew, Command release,
                String lost, String channel) {
            this.request = request;
            this.acquire = acquire;
            this.fenced = fenced;
            this.renew = renew;
            this.release = release;
            this.lost = lost;
            this.channel = channel;
        }
    }

    /** An acquisition of {@code n} of the {@code capacity} permits of a semaphore. */
    Call permits(Request a, int capacity, int n) {
        String key = LockKeys.permitsKey(redis.keys().lockKey(a.name()));
        String[] keys = {key};
        String member = n + ":" + a.token();
        String ttl = Long.toString(a.ttl().toMillis());
        String channel = LockKeys.releaseChannel(key);
        return new Call(a, new Command(PrimitiveScripts.SEMAPHORE_ACQUIRE, keys, member, ttl, Integer.toString(n),
                Integer.toString(capacity)), false,
                new Command(PrimitiveScripts.LEASE_RENEW, keys, member, ttl),
                new Command(PrimitiveScripts.LEASE_RELEASE, keys, member, channel),
                "its permits expired", channel);
    }

    /** An acquisition of a read-write lock, for writing or for reading. */
    Call readWrite(Request a, boolean write) {
        String lockKey = redis.keys().lockKey(a.name());
        String rw = LockKeys.readWriteKey(lockKey);
        String writer = LockKeys.writerKey(lockKey);
        String readers = LockKeys.readersKey(lockKey);
        String waiting = LockKeys.writersWaitingKey(lockKey);
        String token = a.token();
        String ttl = Long.toString(a.ttl().toMillis());
        String channel = LockKeys.releaseChannel(rw);
        if (write) {
            String fenceRetention = Long.toString(a.ttl().plus(RedisStore.FENCE_RETENTION).toMillis());
            return new Call(a, new Command(PrimitiveScripts.WRITE_ACQUIRE, new String[] {writer, LockKeys.fenceKey(writer), readers,
                    waiting}, token, ttl, fenceRetention, redis.waiterLease()), true,
                    new Command(LockScripts.RENEW, new String[] {writer}, token, ttl),
                    // Also takes it out of the waiting writers, so that readers are not kept out.
                    new Command(PrimitiveScripts.WRITE_RELEASE, new String[] {writer, waiting}, token, channel),
                    "its write lease expired or was taken", channel);
        }
        String[] readersKey = {readers};
        return new Call(a, new Command(PrimitiveScripts.READ_ACQUIRE, new String[] {writer, readers, waiting}, token, ttl), false,
                new Command(PrimitiveScripts.LEASE_RENEW, readersKey, token, ttl),
                new Command(PrimitiveScripts.LEASE_RELEASE, readersKey, token, channel),
                "its read lease expired or was taken", channel);
    }

    /** Every call says what it acquires: {@link #permits} or {@link #readWrite} is used instead. */
    @Override
    public Call open(Request request) {
        throw new UnsupportedOperationException("a semaphore or read-write lock acquisition says what it acquires");
    }

    @Override
    public CompletionStage<Reply> acquire(Call call, int attempt) {
        long validFor = call.request.ttl().toNanos();
        return redis.grant(call.acquire.script(), result -> result != 0, call.acquire.keys(), call.acquire.args())
                .thenApply(result -> result == 0
                ? Reply.busy()
                : Reply.granted(call.fenced ? result : LockLease.NO_FENCING_TOKEN, validFor));
    }

    @Override
    public Mono<Void> renew(Call call, Lease lease) {
        long sentAt = System.nanoTime();
        return redis.grantCommand(call.request.timers(), call.renew.script(), renewed -> renewed == 1, call.renew.keys(),
                call.renew.args()).flatMap(renewed -> {
            if (renewed == 1) {
                lease.extendTo(sentAt + call.request.ttl().toNanos());
                return Mono.empty();
            }
            return Mono.error(new LockLostException(call.request.name(), call.lost, null));
        });
    }

    @Override
    public Mono<Boolean> release(Call call) {
        return Mono.defer(() -> command(call, call.release))
                .retryWhen(Retry.backoff(3, redis.options().minBackoff()).scheduler(call.request.timers())
                        .filter(RedisErrors::isTransient))
                .thenReturn(false);
    }

    @Override
    public CompletionStage<?> releaseAbandoned(Call call) {
        return run(call.release);
    }

    @Override
    public boolean isTransient(Throwable error) {
        return RedisErrors.isTransient(error);
    }

    /**
     * Backoff, or until a release notice wakes the caller. A notice wakes one waiter of this
     * process, whose permits may not fit what was released, or one of several readers a release
     * lets in, so the backoff steps stay short; a waiting writer's steps (at most the longest one)
     * stay within its waiter lease.
     */
    @Override
    public Duration pause(Call call, int attempts) {
        if (attempts == 0) {
            return Duration.ZERO;
        }
        if (call.waiter == null) {
            call.waiter = redis.notices().join(call.channel, false, call.request, call, this);
            if (call.request.waiter().hasEnded()) {
                stopWaiting(call); // the acquisition ended while it was joining
            }
        }
        return redis.backoff().step(attempts - 1L);
    }

    /** How many acquisitions of this process wait on the read-write lock {@code name}. */
    int readWriteWaiters(String name) {
        return redis.notices().waiters(LockKeys.releaseChannel(LockKeys.readWriteKey(redis.keys().lockKey(name))));
    }

    @Override
    public void stopWaiting(Call call) {
        ReleaseNotices.Member w = call.waiter;
        if (w != null) {
            w.leave();
        }
    }

    private CompletionStage<Long> run(Command c) {
        return redis.commands().run(c.script(), c.keys(), c.args());
    }

    private Mono<Long> command(Call call, Command c) {
        return redis.command(call.request.timers(), c.script(), c.keys(), c.args());
    }

    @Override
    public String toString() {
        return "PrimitiveStore{" + redis.options() + "}";
    }
}
