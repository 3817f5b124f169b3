package io.reactivelock.redis;

import io.reactivelock.LockOptions;
import io.reactivelock.support.RedisServer;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

/**
 * The package-private Redis plumbing that tests outside this package look at (faults, security,
 * inspector): key names and the scripts' sources and digests. Test code only: the library's own
 * {@code io.reactivelock.redis} has no public type but the clients and their options.
 */
public final class RedisInternals {

    private RedisInternals() {}

    /**
     * Cuts {@code lock}'s connections as a crash of its process would: no renewal, no release
     * ({@code close()} cancels the bodies and releases their locks). Waits until they are closed.
     */
    public static void crash(ReactiveRedisLock lock) {
        lock.crash().toCompletableFuture().join();
    }

    /** A Lua script as Redis knows it: its source, and the digest {@code EVALSHA} names it by. */
    public record Script(String source, String sha) {
        static Script of(LuaScript script) {
            return new Script(script.source(), script.sha());
        }
    }

    /** The single lock's acquire script. */
    public static final Script ACQUIRE = Script.of(LockScripts.ACQUIRE);
    /** The single lock's renewal script. */
    public static final Script RENEW = Script.of(LockScripts.RENEW);
    /** The single lock's release script. */
    public static final Script RELEASE = Script.of(LockScripts.RELEASE);
    /** The fair lock's release script. */
    public static final Script RELEASE_FAIR = Script.of(LockScripts.RELEASE_FAIR);
    /** The renewal script of a semaphore's permits and of a reader's lease. */
    public static final Script LEASE_RENEW = Script.of(PrimitiveScripts.LEASE_RENEW);

    /** The lock key of {@code name} under the default key prefix. */
    public static String lockKey(String name) {
        return lockKey(LockOptions.DEFAULT_KEY_PREFIX, name);
    }

    /** The lock key of {@code name} under {@code prefix}. */
    public static String lockKey(String prefix, String name) {
        return new LockKeys(prefix).lockKey(name);
    }

    /** The fencing record of the lock whose key is {@code lockKey}. */
    public static String fenceKey(String lockKey) {
        return LockKeys.fenceKey(lockKey);
    }

    /** The fair line of the lock whose key is {@code lockKey}. */
    public static String queueKey(String lockKey) {
        return LockKeys.queueKey(lockKey);
    }

    /** The waiters to wake of the lock whose key is {@code lockKey}. */
    public static String waitersKey(String lockKey) {
        return LockKeys.waitersKey(lockKey);
    }

    /** The release channel of the lock whose key is {@code lockKey}. */
    public static String releaseChannel(String lockKey) {
        return LockKeys.releaseChannel(lockKey);
    }

    /**
     * How many subscriptions {@code redis} has to release notices of the lock whose key is
     * {@code lockKey}: on its release channel, and on that channel addressed to one client each.
     */
    public static long releaseListeners(RedisServer redis, String lockKey) {
        List<String> channels = redis.callList("PUBSUB", "CHANNELS", releaseChannel(lockKey) + "*").stream()
                .map(String::valueOf).toList();
        if (channels.isEmpty()) {
            return 0;
        }
        List<String> numsub = new ArrayList<>(List.of("PUBSUB", "NUMSUB"));
        numsub.addAll(channels);
        List<Object> counts = redis.callList(numsub.toArray(String[]::new));
        return IntStream.range(0, counts.size() / 2).mapToLong(i -> (Long) counts.get(2 * i + 1)).sum();
    }
}
