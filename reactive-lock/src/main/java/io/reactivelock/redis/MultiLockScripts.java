package io.reactivelock.redis;


/**
 * The Lua scripts of the multi-lock. Each works on the names of one hash slot (all of them, on a
 * server that is not a Cluster) with the single lock's keys: the lock key holding the token, its
 * fencing record and its sleepers (see {@link LockScripts#ACQUIRE}), so a name
 * held by either lock is busy for the other, and a release wakes the waiters of both.
 */
final class MultiLockScripts {

    private MultiLockScripts() {}

    /**
     * Acquire, all or none. KEYS: for each name, its lock, fencing record and sleepers. ARGV:
     * token, ttl ms, fence retention ms, waiter lease ms, the waiter's start (epoch ms), then each
     * name's release channel. Returns the fencing token (> 0) when every name is now the token's,
     * or {@code -i} when name {@code i} (from 1) is held by another token. A name the token holds
     * (with or without the sleepers mark) or that a single lock's release kept for it
     * ({@code ~token}) counts as free for it.
     *
     * <p>Granted: every lock is set to the token for the ttl, with the sleepers mark where
     * sleepers are left (see {@link LockScripts#ACQUIRE}), and every name's record to one fencing
     * token, the server clock in microseconds raised above the last token issued for each of the
     * names, so it is above every earlier holder's of each name. The token leaves the sleepers.
     *
     * <p>Refused: the token keeps nothing (a name it held or that was kept for it is released), it
     * sleeps on the busy name only (marking that lock, so that its release looks at the sleepers),
     * and each other name that is free has its oldest sleeper woken: that waiter may have been
     * passed over for this caller, woken by a release and then refused.
     */
    static final LuaScript ACQUIRE = LuaScript.of("""
            local n = #KEYS / 3
            for i = 1, n do
              local holder = redis.call('GET', KEYS[3 * i - 2])
              if holder and holder ~= ARGV[1] and holder ~= ARGV[1] .. '+' and holder ~= '~' .. ARGV[1] then
                for j = 1, n do
                  local sleepers = KEYS[3 * j]
                  if j == i then
                    redis.call('ZADD', sleepers, 'NX', ARGV[5], ARGV[1])
                    redis.call('PEXPIRE', sleepers, ARGV[4])
            """ + LockScripts.markSleepers("KEYS[3 * j - 2]", "holder") + """
                  else
                    redis.call('ZREM', sleepers, ARGV[1])
                    local other = redis.call('GET', KEYS[3 * j - 2])
                    if other == ARGV[1] or other == ARGV[1] .. '+' or other == '~' .. ARGV[1] then
                      redis.call('DEL', KEYS[3 * j - 2])
                      other = false
                    end
                    if not other then
                      local next = redis.call('ZPOPMIN', sleepers)
                      if next[1] then
            """ + LockScripts.notify("ARGV[5 + j]", "next[1]") + """
                      end
                    end
                  end
                end
                return -i
              end
            end
            local now = redis.call('TIME')
            local fence = tonumber(now[1]) * 1000000 + tonumber(now[2])
            for i = 1, n do
              local last = tonumber(redis.call('GET', KEYS[3 * i - 1]))
              if last and last >= fence then fence = last + 1 end
            end
            local token = string.format('%.0f', fence)
            for i = 1, n do
              redis.call('ZREM', KEYS[3 * i], ARGV[1])
              local mark = redis.call('ZCARD', KEYS[3 * i]) > 0 and '+' or ''
              redis.call('SET', KEYS[3 * i - 2], ARGV[1] .. mark, 'PX', ARGV[2])
              redis.call('SET', KEYS[3 * i - 1], token, 'PX', ARGV[3])
            end
            return fence
            """);

    /**
     * Renewal, all or none. KEYS: each name's lock. ARGV: token, ttl ms. Extends every lock if the
     * token holds them all (with or without the sleepers mark) and returns 0; otherwise extends
     * none and returns the index (from 1) of the first lock the token does not hold.
     */
    static final LuaScript RENEW = LuaScript.of("""
            for i = 1, #KEYS do
              local holder = redis.call('GET', KEYS[i])
              if holder ~= ARGV[1] and holder ~= ARGV[1] .. '+' then return i end
            end
            for i = 1, #KEYS do
              redis.call('PEXPIRE', KEYS[i], ARGV[2])
            end
            return 0
            """);

    /**
     * Release, also used to stop waiting. KEYS: for each name, its lock and sleepers. ARGV:
     * token, then each name's release channel. Takes the token out of every name's sleepers;
     * deletes each lock the token holds (with or without the sleepers mark) or that a single
     * lock's release kept for it ({@code ~token}, see {@link LockScripts#RELEASE}), and wakes that
     * name's oldest sleeper by publishing its token; unlike the single lock's release it does not
     * keep the lock for that sleeper, who races newcomers for it. Returns how many locks were
     * deleted.
     */
    static final LuaScript RELEASE = LuaScript.of("""
            local released = 0
            for i = 1, #KEYS / 2 do
              local lock, sleepers = KEYS[2 * i - 1], KEYS[2 * i]
              redis.call('ZREM', sleepers, ARGV[1])
              local holder = redis.call('GET', lock)
              if holder == ARGV[1] or holder == ARGV[1] .. '+' or holder == '~' .. ARGV[1] then
                redis.call('DEL', lock)
                released = released + 1
                local next = redis.call('ZPOPMIN', sleepers)
                if next[1] then
            """ + LockScripts.notify("ARGV[1 + i]", "next[1]") + """
                end
              end
            end
            return released
            """);
}
