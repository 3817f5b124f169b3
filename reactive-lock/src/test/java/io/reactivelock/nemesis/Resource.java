package io.reactivelock.nemesis;

/**
 * The protected resource, in a Redis server of its own that the nemesis never touches: per lock
 * name a counter, kept twice. The <em>fenced</em> twin checks fencing tokens as a resource should;
 * the <em>unfenced</em> twin ignores them, and is the negative control. Each access of an operation
 * goes to both in one script call, so both twins see the same holders at the same moments and
 * differ only in fencing. Every access, accepted or not, is appended to {@link #LOG} in the order
 * the resource saw it.
 *
 * <p>Each twin remembers per name the highest fencing token it has <em>seen</em> (read or written).
 * The fenced twin refuses an access whose token is below that: a holder whose lease ran out cannot
 * write after a newer holder has read, so a read-modify-write never loses an update even when two
 * holders overlap (a client frozen past its lease, a lock Redis restarted empty). The unfenced twin
 * accepts everything and still logs what it would have refused. An operation whose read the fenced
 * twin refused does not write to it, but still writes to the unfenced one, as it would with no fencing
 * anywhere.
 */
final class Resource {

    /** The list of accesses: {@code op name twin kind fence seenBefore valueBefore accepted valueRead}. */
    static final String LOG = "res:log";

    /**
     * KEYS: the name's fenced hash (value, seen), its unfenced hash, the log. ARGV: {@code read} or
     * {@code write}, fencing token, op id, name, and for a write the value read from the fenced twin
     * ({@code -} when that read was refused: no write to it) and from the unfenced twin. Returns for
     * each twin the value before the access, -1 if refused, -2 if not accessed. A write stores the
     * value read plus one.
     */
    static final String SCRIPT = """
            local function access(key, twin, fencing, valueRead)
              local seen = redis.call('HGET', key, 'seen') or '0'
              local value = tonumber(redis.call('HGET', key, 'value') or '0')
              local stale = tonumber(ARGV[2]) < tonumber(seen)
              local accepted = not (fencing and stale)
              if accepted then
                if not stale then redis.call('HSET', key, 'seen', ARGV[2]) end
                if ARGV[1] == 'write' then redis.call('HSET', key, 'value', tonumber(valueRead) + 1) end
              end
              redis.call('RPUSH', KEYS[3], table.concat({ARGV[3], ARGV[4], twin, ARGV[1], ARGV[2], seen, value,
                  accepted and '1' or '0', valueRead or '-1'}, ' '))
              if accepted then return value end
              return -1
            end
            local fenced = -2
            if ARGV[1] == 'read' or ARGV[5] ~= '-' then fenced = access(KEYS[1], 'fenced', true, ARGV[5]) end
            return {fenced, access(KEYS[2], 'unfenced', false, ARGV[6])}
            """;

    private Resource() {}

    /** The keys of one name's counter: fenced twin, unfenced twin, log. */
    static String[] keys(String name) {
        return new String[] {"res:fenced:{" + name + "}", "res:unfenced:{" + name + "}", LOG};
    }
}
