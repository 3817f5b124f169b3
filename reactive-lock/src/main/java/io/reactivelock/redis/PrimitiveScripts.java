package io.reactivelock.redis;

/**
 * The Lua scripts of the semaphore and the read-write lock. Both keep their shared holders (a
 * semaphore's holders, a lock's readers) in a <em>lease set</em>: a sorted set of members scored
 * by the server time (ms) at which each member's lease ends. Every script that reads a lease set
 * first drops the members whose lease has ended, so a dead holder counts until its TTL and no
 * longer; the key itself expires with its last lease.
 */
final class PrimitiveScripts {

    private PrimitiveScripts() {}

    /** Sets {@code now} (the server time in ms) from {@code t} (a {@code TIME} reply). */
    private static final String NOW = """
            local t = redis.call('TIME')
            local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            """;

    /**
     * Makes member ARGV[m]'s lease in the lease set KEYS[ks] end ARGV[t] ms from now; the key
     * expires with its last lease, whoever's it is (callers with other TTLs or waiter leases may share it).
     */
    private static String hold(int ks, int m, int t) {
        return """
                redis.call('ZADD', KEYS[%1$d], now + tonumber(ARGV[%3$d]), ARGV[%2$d])
                local latest = redis.call('ZRANGE', KEYS[%1$d], -1, -1, 'WITHSCORES')
                redis.call('PEXPIRE', KEYS[%1$d], tonumber(latest[2]) - now)
                """.formatted(ks, m, t);
    }

    /** {@link #hold(int, int, int)} of member ARGV[1] for ARGV[2] ms. */
    private static String hold(int ks) {
        return hold(ks, 1, 2);
    }

    /** Drops the members of the lease set KEYS[ks] whose lease has ended. */
    private static String dropExpired(int ks) {
        return "redis.call('ZREMRANGEBYSCORE', KEYS[%d], '-inf', now)\n".formatted(ks);
    }

    /**
     * Semaphore acquire. KEYS: permits (a lease set of members {@code "<n>:<token>"}). ARGV:
     * member, ttl ms, n, capacity. Returns 1 when the member holds its permits (taken now, or
     * already its own: a retried attempt), 0 when the live holders' permits plus n exceed the
     * capacity.
     */
    public static final LuaScript SEMAPHORE_ACQUIRE = LuaScript.of(NOW + dropExpired(1) + """
            if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
              local used = 0
              for _, holder in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
                used = used + tonumber(string.match(holder, '^%d+'))
              end
              if used + tonumber(ARGV[3]) > tonumber(ARGV[4]) then return 0 end
            end
            """ + hold(1) + "return 1\n");

    /**
     * Renewal of a member of a lease set (a semaphore holder, a reader). KEYS: the lease set.
     * ARGV: member, ttl ms. Extends the member's lease if it is still live; returns 1 if so.
     */
    public static final LuaScript LEASE_RENEW = LuaScript.of(NOW + dropExpired(1) + """
            if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
            """ + hold(1) + "return 1\n");

    /**
     * Release of a member of a lease set. KEYS: the lease set. ARGV: member, release channel.
     * Removes the member and announces it; returns 1 if it was there.
     */
    public static final LuaScript LEASE_RELEASE = LuaScript.of("""
            if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
            redis.call('PUBLISH', ARGV[2], '')
            return 1
            """);

    /**
     * Read acquire, writer preference. KEYS: writer, readers (a lease set of tokens), waiting
     * writers (a lease set of tokens, scored by their waiter lease). ARGV: token, ttl ms. Returns 1
     * when the token reads (now, or already: a retried attempt), 0 while a writer holds the lock or
     * a live writer waits for it.
     */
    public static final LuaScript READ_ACQUIRE = LuaScript.of(NOW + dropExpired(2) + dropExpired(3) + """
            if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
              if redis.call('GET', KEYS[1]) or redis.call('ZCARD', KEYS[3]) > 0 then return 0 end
            end
            """ + hold(2) + "return 1\n");

    /**
     * Write acquire. KEYS: writer, fence, readers, waiting writers. ARGV: token, ttl ms, fence
     * retention ms, waiter lease ms. Returns the fencing token when the token writes (now, or
     * already: a retried attempt gets the same one). Otherwise, while another writer or a live
     * reader holds the lock, registers the token among the waiting writers for one waiter lease
     * (which keeps new readers out) and returns 0.
     *
     * <p>The fencing token is the single lock's: the server clock in microseconds, raised above
     * the last one issued for the name's writers while their record lives.
     */
    public static final LuaScript WRITE_ACQUIRE = LuaScript.of(NOW + dropExpired(3) + dropExpired(4) + """
            local holder = redis.call('GET', KEYS[1])
            if holder == ARGV[1] then
              redis.call('PEXPIRE', KEYS[1], ARGV[2])
              local fence = tonumber(redis.call('GET', KEYS[2]))
              if fence then return fence end
            elseif holder or redis.call('ZCARD', KEYS[3]) > 0 then
            """ + hold(4, 1, 4) + """
              return 0
            else
              redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
            end
            redis.call('ZREM', KEYS[4], ARGV[1])
            """ + LockScripts.nextFence("t") + """
            return fence
            """);

    /**
     * Write release, also used to stop waiting. KEYS: writer, waiting writers. ARGV: token, release
     * channel. Takes the token out of the waiting writers; deletes the writer if it is the token.
     * Announces a deleted writer, and the last waiting writer leaving (readers may enter then), to
     * every waiter of every process ({@code "*"}): a release that lets readers in may let in all of them.
     * Returns 1 if the writer was deleted.
     */
    public static final LuaScript WRITE_RELEASE = LuaScript.of("""
            local left = redis.call('ZREM', KEYS[2], ARGV[1])
            if redis.call('GET', KEYS[1]) == ARGV[1] then
              redis.call('DEL', KEYS[1])
              redis.call('PUBLISH', ARGV[2], '*')
              return 1
            end
            if left == 1 and redis.call('ZCARD', KEYS[2]) == 0 then redis.call('PUBLISH', ARGV[2], '*') end
            return 0
            """);
}
