package io.reactivelock.redis;

import io.reactivelock.spi.Tokens;

/** The Lua scripts of the single-Redis lock. Each is atomic on the server. */
final class LockScripts {

    private LockScripts() {}

    /**
     * Issues the next fencing token into {@code fence}, given the {@code TIME} reply in the Lua
     * variable {@code time}, KEYS[2] (the fencing record: the last token issued, in decimal) and
     * ARGV[3] (its retention in ms): the server clock in microseconds, or one above the last token
     * issued for the lock if that is higher. The record is written and the last token read in one
     * {@code SET ... GET} (Redis 6.2); only when the clock is not ahead of the last token (it
     * stepped back) is it written again.
     */
    static String nextFence(String time) {
        return """
                local fence = tonumber(%1$s[1]) * 1000000 + tonumber(%1$s[2])
                local last = tonumber(redis.call('SET', KEYS[2], string.format('%%.0f', fence), 'PX', ARGV[3], 'GET'))
                if last and last >= fence then
                  fence = last + 1
                  redis.call('SET', KEYS[2], string.format('%%.0f', fence), 'PX', ARGV[3])
                end
                """.formatted(time);
    }

    private static final String NEXT_FENCE = nextFence("now");

    /**
     * Sets the sleepers mark ({@link #ACQUIRE}) on the lock whose key is the Lua expression
     * {@code key} and whose value, busy, is in the Lua variable {@code holder}: a holder's token
     * gets {@code +} unless it has it; a kept lock ({@code ~token}) is looked at by its release
     * anyway. Inlined rather than a Lua function, which each call of the script would define.
     */
    static String markSleepers(String key, String holder) {
        return """
                if string.byte(%2$s) ~= 126 and string.byte(%2$s, -1) ~= 43 then
                  redis.call('SET', %1$s, %2$s .. '+', 'KEEPTTL')
                end
                """.formatted(key, holder);
    }

    /**
     * Publishes the token of a waiter whose lock a release keeps for it, {@code token} (a Lua
     * expression), on the lock's release channel {@code channel} (a Lua expression) followed by
     * the token's {@linkplain ReleaseNotices#address() address}: what follows its
     * {@value Tokens#LENGTH} random hex digits. Only the waiter's own client listens there, so
     * Redis writes the notice to one connection, not to every client waiting on the lock. A token
     * without an address (a client of an earlier version) is published on the channel itself.
     */
    static String notify(String channel, String token) {
        return """
                redis.call('PUBLISH', %1$s .. string.sub(%2$s, %3$d), %2$s)
                """.formatted(channel, token, Tokens.LENGTH + 1);
    }

    /**
     * KEYS: lock, fence, and optionally sleepers. ARGV: token, ttl ms, fence retention ms, and with
     * sleepers the waiter lease ms, the waiter's start (epoch ms) and {@code 1} when an earlier
     * attempt of this token was sent (so it may be among the sleepers), else {@code 0}. Returns the
     * fencing token (> 0) when the lock is ours, or 0 when another token holds it; then, given
     * sleepers, the token is registered there once, scored by its start, so that releases wake
     * waiters by name in the order they started; the sleepers expire one waiter lease after the
     * last registration. A grant takes the token out of the sleepers.
     *
     * <p><b>The lock's value</b> is its holder's token, followed by the <em>sleepers mark</em>
     * {@code +} once a waiter registered while it held the lock, or {@code ~} and a token while a
     * release keeps the lock for that waiter ({@link #RELEASE}). Why the mark: a release must wake
     * a sleeper when there is one, but looking at the sleepers costs a call ({@code ZPOPMIN} on a
     * missing key is still one). With the mark in the value it reads anyway, an unmarked release is
     * the raw compare-and-delete: {@code GET} and {@code DEL}. The mark errs on the safe side: a
     * claim of a kept lock carries it (more may sleep), and so does a grant to a registered waiter
     * that leaves others registered. A lock that expired takes its mark with it; the sleepers'
     * next attempts, one longest backoff step later at the latest, mark its next holder.
     *
     * <p>Taking a lock we already hold with the same token succeeds again with the same fencing
     * token: an attempt whose reply was lost can be retried safely. A lock kept for this token is
     * claimed: set to the token for the ttl, with a new fencing token. The first attempt on a free
     * lock, the common case, costs a {@code SET NX} and the fencing token's two calls
     * ({@code TIME}, {@code SET ... GET}).
     *
     * <p>The fencing token is the server clock in microseconds, raised above the last token issued
     * for the lock while its record lives. Records expire, so memory stays bounded by the locks
     * used recently, and tokens still grow across that expiry, a restart or a failover as long as
     * the (new) server's clock is not behind the last token issued; a lost record that was ahead
     * of it lets tokens go backwards (README, "Fencing tokens").
     */
    public static final LuaScript ACQUIRE = LuaScript.of("""
            local holder = false
            if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then holder = redis.call('GET', KEYS[1]) end
            if not holder then
              if KEYS[3] and ARGV[6] == '1' then
                redis.call('ZREM', KEYS[3], ARGV[1])
                if redis.call('ZCARD', KEYS[3]) > 0 then redis.call('SET', KEYS[1], ARGV[1] .. '+', 'PX', ARGV[2]) end
              end
            elseif holder == ARGV[1] or holder == ARGV[1] .. '+' then
              redis.call('PEXPIRE', KEYS[1], ARGV[2])
              if KEYS[3] then redis.call('ZREM', KEYS[3], ARGV[1]) end
              local fence = tonumber(redis.call('GET', KEYS[2]))
              if fence then return fence end
            elseif holder == '~' .. ARGV[1] then
              redis.call('SET', KEYS[1], ARGV[1] .. '+', 'PX', ARGV[2])
              if KEYS[3] then redis.call('ZREM', KEYS[3], ARGV[1]) end
            else
              if KEYS[3] then
                redis.call('ZADD', KEYS[3], 'NX', ARGV[5], ARGV[1])
                redis.call('PEXPIRE', KEYS[3], ARGV[4])
            """ + markSleepers("KEYS[1]", "holder") + """
              end
              return 0
            end
            local now = redis.call('TIME')
            """ + NEXT_FENCE + """
            return fence
            """);

    /**
     * KEYS: lock, and optionally its sleepers. ARGV: token, release channel, and with the sleepers
     * the grace ms. If the token holds the lock, or the lock is kept for it (a waiter leaving),
     * releases it. Without sleepers (Redlock) every listening process hears of it (an empty
     * message). With sleepers, a lock that carries the sleepers mark or was kept goes to the one
     * that started first, in whichever process: it is popped, the lock is kept for it for the
     * grace period (the lock's value becomes {@code ~} and its token), and its token is published;
     * its next attempt, which the notice brings at once, claims the lock with a new fencing token
     * ({@link #ACQUIRE}), while newcomers find it busy and nobody can renew the kept lock. Returns
     * 2 then; with no sleeper the lock is deleted and 1 returned. Otherwise takes the token out of
     * the sleepers and returns 0.
     *
     * <p>A sleeper that died without leaving holds the lock up for the grace period, after which
     * the other waiters' polls find it free. A holder's token is not among the sleepers, since
     * its grant took it out, unless an attempt of its that found the lock busy ran after the grant
     * (replies of one connection come in order, but a {@code NOSCRIPT} retry is a second command):
     * if it is the oldest, it is popped and passed over.
     *
     * <p>An unmarked release, the uncontended case, is {@code GET} and {@code DEL}: the raw
     * compare-and-delete's two calls.
     */
    public static final LuaScript RELEASE = LuaScript.of("""
            local holder = redis.call('GET', KEYS[1])
            if holder == ARGV[1] then
              redis.call('DEL', KEYS[1])
              if not KEYS[2] then redis.call('PUBLISH', ARGV[2], '') end
              return 1
            end
            if not KEYS[2] or (holder ~= ARGV[1] .. '+' and holder ~= '~' .. ARGV[1]) then
              if KEYS[2] then redis.call('ZREM', KEYS[2], ARGV[1]) end
              return 0
            end
            local next = redis.call('ZPOPMIN', KEYS[2])
            if next[1] == ARGV[1] then next = redis.call('ZPOPMIN', KEYS[2]) end
            if next[1] then
              redis.call('SET', KEYS[1], '~' .. next[1], 'PX', ARGV[3])
            """ + notify("ARGV[2]", "next[1]") + """
              return 2
            end
            redis.call('DEL', KEYS[1])
            return 1
            """);

    /**
     * Non-fair hand-off to a waiter in the same process: one round trip instead of a release, a
     * notice and the waiter's acquire. KEYS: lock, fence, sleepers. ARGV: holder's token, next
     * holder's token, fence retention ms (for the next holder's lease), next holder's ttl ms. If
     * the holder's token holds the lock, the next holder's token replaces it (with the sleepers
     * mark, if the lock carried it) and the fencing token moves on; returns that fencing token, or
     * 0 when the holder no longer held the lock (nothing changes then).
     */
    public static final LuaScript HAND_OVER = LuaScript.of("""
            local holder = redis.call('GET', KEYS[1])
            if holder ~= ARGV[1] and holder ~= ARGV[1] .. '+' then
              return 0
            end
            redis.call('SET', KEYS[1], holder == ARGV[1] and ARGV[2] or ARGV[2] .. '+', 'PX', ARGV[4])
            redis.call('ZREM', KEYS[3], ARGV[2])
            local now = redis.call('TIME')
            """ + NEXT_FENCE + """
            return fence
            """);

    /**
     * KEYS: lock. ARGV: token, ttl ms. Extends the lock if it holds the token (with or without the
     * sleepers mark, see {@link #ACQUIRE}); returns 1 if so. A lock kept for the token is not its
     * to renew.
     */
    public static final LuaScript RENEW = LuaScript.of("""
            local holder = redis.call('GET', KEYS[1])
            if holder == ARGV[1] or holder == ARGV[1] .. '+' then
              return redis.call('PEXPIRE', KEYS[1], ARGV[2])
            end
            return 0
            """);

    /**
     * Fair acquire. KEYS: lock, fence, queue (list of waiting tokens in arrival order), waiters
     * (hash of token to the server-time deadline by which that waiter must call again). ARGV:
     * token, ttl ms, fence retention ms, waiter lease ms. Returns the fencing token, or 0 after
     * queueing the caller (or refreshing its place) when the lock is busy or not its turn.
     *
     * <p>Waiters whose deadline passed (crashed, disconnected) are dropped from the head of the
     * line first, so a dead waiter delays the others by at most one waiter lease. A caller that
     * holds the lock (the claim of a lock handed to it, or a retry) keeps the fencing record for
     * its own retention from then: the release that handed it over wrote the record with the
     * releaser's.
     */
    public static final LuaScript ACQUIRE_FAIR = LuaScript.of("""
            local now = redis.call('TIME')
            local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
            local head = redis.call('LINDEX', KEYS[3], 0)
            while head do
              local deadline = tonumber(redis.call('HGET', KEYS[4], head))
              if deadline and deadline >= nowMs then break end
              redis.call('LPOP', KEYS[3])
              redis.call('HDEL', KEYS[4], head)
              head = redis.call('LINDEX', KEYS[3], 0)
            end
            local holder = redis.call('GET', KEYS[1])
            if holder == ARGV[1] or holder == ARGV[1] .. '+' then
              redis.call('PEXPIRE', KEYS[1], ARGV[2])
              local fence = tonumber(redis.call('GET', KEYS[2]))
              if fence then
                redis.call('PEXPIRE', KEYS[2], ARGV[3])
                return fence
              end
            elseif holder or (head and head ~= ARGV[1]) then
              if redis.call('HSET', KEYS[4], ARGV[1], nowMs + tonumber(ARGV[4])) == 1 then
                redis.call('RPUSH', KEYS[3], ARGV[1])
              end
              redis.call('PEXPIRE', KEYS[3], ARGV[4])
              redis.call('PEXPIRE', KEYS[4], ARGV[4])
              return 0
            else
              redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
              if head then
                redis.call('LPOP', KEYS[3])
                redis.call('HDEL', KEYS[4], ARGV[1])
              end
            end
            """ + NEXT_FENCE + """
            return fence
            """);

    /**
     * Fair release, also used to leave the line. KEYS: lock, fence, queue, waiters. ARGV: token,
     * release channel, fence retention ms (the waiter's when one is named, else the releaser's, which
     * a waiter of another process replaces when it claims), waiter lease ms, and optionally a waiter
     * in the releaser's process (token, ttl ms). If the token holds the lock, hands it straight to the
     * first live waiter and moves the fencing token on. That waiter's token becomes the value:
     * when it is the named waiter, for its ttl, and the fencing token is returned (the releaser
     * delivers it in-process); else for one waiter lease until it claims the lock, and its token is
     * published. With no live waiter, deletes the lock. Otherwise removes the token from the line.
     * Returns the fencing token (far above 2) when handed to the named waiter, 2 when handed to the
     * first in line otherwise, 1 when the lock was released with nobody in line, else 0.
     */
    public static final LuaScript RELEASE_FAIR = LuaScript.of("""
            local holder = redis.call('GET', KEYS[1])
            if holder ~= ARGV[1] and holder ~= ARGV[1] .. '+' then
              if redis.call('HDEL', KEYS[4], ARGV[1]) == 1 then
                redis.call('LREM', KEYS[3], 1, ARGV[1])
              end
              return 0
            end
            local now = redis.call('TIME')
            local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
            local nextToken = redis.call('LPOP', KEYS[3])
            while nextToken do
              local deadline = tonumber(redis.call('HGET', KEYS[4], nextToken))
              redis.call('HDEL', KEYS[4], nextToken)
              if deadline and deadline >= nowMs then
                local named = nextToken == ARGV[5]
                redis.call('SET', KEYS[1], nextToken, 'PX', named and ARGV[6] or ARGV[4])
            """ + NEXT_FENCE + """
                if named then return fence end
            """ + notify("ARGV[2]", "nextToken") + """
                return 2
              end
              nextToken = redis.call('LPOP', KEYS[3])
            end
            redis.call('DEL', KEYS[1])
            return 1
            """);
}
