package io.reactivelock.internal;

/** The Lua scripts of the single-Redis lock. Each is atomic on the server. */
public final class LockScripts {

    private LockScripts() {}

    /**
     * KEYS: lock, fence. ARGV: token, ttl ms, fence retention ms. Returns the fencing token (> 0)
     * when the lock is ours, or 0 when another token holds it.
     *
     * <p>Taking a lock we already hold with the same token succeeds again with the same fencing
     * token: an attempt whose reply was lost can be retried safely.
     *
     * <p>The fencing token is the server clock in microseconds, raised above the last token issued
     * for the lock while its record lives. Records expire, so memory stays bounded by the locks
     * used recently, and tokens still grow across that expiry, a restart or a failover as long as
     * the server clock does not step back.
     */
    public static final LuaScript ACQUIRE = LuaScript.of("""
            local holder = redis.call('GET', KEYS[1])
            if holder == ARGV[1] then
              redis.call('PEXPIRE', KEYS[1], ARGV[2])
              local fence = tonumber(redis.call('GET', KEYS[2]))
              if fence then return fence end
            elseif holder then
              return 0
            else
              redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
            end
            local now = redis.call('TIME')
            local fence = tonumber(now[1]) * 1000000 + tonumber(now[2])
            local last = tonumber(redis.call('GET', KEYS[2]))
            if last and last >= fence then fence = last + 1 end
            redis.call('SET', KEYS[2], string.format('%.0f', fence), 'PX', ARGV[3])
            return fence
            """);

    /** KEYS: lock. ARGV: token. Deletes the lock if it holds the token; returns 1 if deleted. */
    public static final LuaScript RELEASE = LuaScript.of("""
            if redis.call('GET', KEYS[1]) == ARGV[1] then
              return redis.call('DEL', KEYS[1])
            end
            return 0
            """);

    /** KEYS: lock. ARGV: token, ttl ms. Extends the lock if it holds the token; returns 1 if so. */
    public static final LuaScript RENEW = LuaScript.of("""
            if redis.call('GET', KEYS[1]) == ARGV[1] then
              return redis.call('PEXPIRE', KEYS[1], ARGV[2])
            end
            return 0
            """);
}
