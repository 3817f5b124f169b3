package io.reactivelock.redis;

import io.reactivelock.spi.Waiter;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * The fair lock: waiters queue in Redis (a list in arrival order and a hash of their waiter
 * leases) and a release hands the lock to the first live waiter. When that waiter is in this
 * process the hand-off is delivered here, with no notice and no extra round trip; otherwise its
 * token is published and it claims the lock with its next attempt. A waiter that leaves (or
 * whose acquisition ended with any attempt sent) takes its token out of the line with the
 * release script, and a waiter that stops calling loses its place after one waiter lease.
 */
final class FairRedisStore extends RedisStore {

    FairRedisStore(StoreContext redis) {
        super(redis);
    }

    /** Always the script: a newcomer's {@code SET NX PX} would go ahead of the line. */
    @Override
    public CompletionStage<Reply> acquire(Call call, int attempt) {
        return acquireByScript(call, attempt, false);
    }

    @Override
    String[] acquireKeys(Call call) {
        return new String[] {call.lockKey, LockKeys.fenceKey(call.lockKey), LockKeys.queueKey(call.lockKey),
                LockKeys.waitersKey(call.lockKey)};
    }

    @Override
    String[] acquireArgs(Call call, int attempt) {
        return new String[] {call.token(), call.ttlMillis(), call.fenceRetention(), redis.waiterLease()};
    }

    @Override
    String[] releaseKeys(Call call) {
        return acquireKeys(call);
    }

    @Override
    String[] releaseArgs(Call call) {
        return new String[] {call.token(), call.channel, call.fenceRetention(), redis.waiterLease()};
    }

    @Override
    LuaScript acquireScript() {
        return LockScripts.ACQUIRE_FAIR;
    }

    @Override
    LuaScript releaseScript() {
        return LockScripts.RELEASE_FAIR;
    }

    /** Redis keeps the order: a local waiter gets the lock only when it is first in line there. */
    @Override
    @Nullable Duration handOffRun() {
        return null;
    }

    @Override
    CompletionStage<Long> handOffCommand(Call call, Call next) {
        // The fencing record kept for the next holder's lease, as a claim would keep it.
        String[] args = {call.token(), call.channel, next.fenceRetention(), redis.waiterLease(), next.token(), next.ttlMillis()};
        return redis.grant(LockScripts.RELEASE_FAIR, this::handedOver, releaseKeys(call), args);
    }

    /** {@code RELEASE_FAIR} returns the fencing token (far above 2) when it handed the lock to the named waiter. */
    @Override
    boolean handedOver(long result) {
        return result > 2;
    }

    /** Redis handed the lock to the first in line (and announced it) or released it: nothing to do here. */
    @Override
    void notHandedOver(Waiter recipient) {}

    /** A fair waiter keeps its place in the line by calling at least once per waiter lease. */
    @Override
    Duration followerStep() {
        return redis.options().waiterLease().dividedBy(2);
    }

    /** A fair waiter keeps its place by calling; it never queues behind local waiters first. */
    @Override
    Duration beforeFirstAttempt(Call call) {
        return Duration.ZERO;
    }

    @Override
    public String toString() {
        return "FairRedisStore{" + redis.options() + "}";
    }
}
