package io.reactivelock.redis;

import java.util.Objects;
import io.reactivelock.spi.Arguments;

/**
 * Turns a user's lock name into Redis keys.
 *
 * <p>Layout: {@code <prefix>:{<escaped name>}} for the lock and the same with {@code :fence} for
 * its fencing record ({@code :queue} and {@code :waiters} for the line of a fair lock,
 * {@code :released} for its release channel). The escaped name is the Cluster hash tag, so both keys of one lock share a
 * slot. Escaping ({@code %} to {@code %25}, <code>{</code> to {@code %7B}, <code>}</code> to
 * {@code %7D}) is injective, so two names never share a key, and it keeps a name from ending
 * the hash tag early or leaving it empty (which would hash the two keys to different slots).
 */
final class LockKeys {

    /** What follows a lock key in the key of the semaphore on the same name. */
    public static final String PERMITS = ":permits";
    /** What follows a lock key in the keys of the read-write lock on the same name. */
    public static final String READ_WRITE = ":rw";
    /** What follows a lock key in the key of the writer of the read-write lock on the same name. */
    public static final String WRITER = READ_WRITE + ":writer";
    /** What follows a lock key in the key of the readers of the read-write lock on the same name. */
    public static final String READERS = READ_WRITE + ":readers";
    /** What follows a lock key in the key of the waiting writers of the read-write lock on the same name. */
    public static final String WRITERS_WAITING = READ_WRITE + ":writers-waiting";

    private final String prefix;

    public LockKeys(String prefix) {
        this.prefix = Objects.requireNonNull(prefix, "prefix");
    }

    /** The lock key of {@code name}, which must already be {@linkplain Arguments#checkName valid}. */
    public String lockKey(String name) {
        return prefix + ":{" + escape(name) + "}";
    }

    /** The fencing record of the lock whose key is {@code lockKey}; same hash slot. */
    public static String fenceKey(String lockKey) {
        return lockKey + ":fence";
    }

    /** The list of waiting tokens of a fair lock; same hash slot. */
    public static String queueKey(String lockKey) {
        return lockKey + ":queue";
    }

    /** The waiters' deadlines of a fair lock; same hash slot. */
    public static String waitersKey(String lockKey) {
        return lockKey + ":waiters";
    }

    /** The waiting tokens of a non-fair lock, scored by their waiter-lease deadline; same hash slot. */
    public static String sleepersKey(String lockKey) {
        return lockKey + ":sleepers";
    }

    /** The permits of the semaphore on the lock's name: a lease set of {@code "<n>:<token>"}; same hash slot. */
    public static String permitsKey(String lockKey) {
        return lockKey + PERMITS;
    }

    /** What the keys of the read-write lock on the lock's name start with; same hash slot. */
    public static String readWriteKey(String lockKey) {
        return lockKey + READ_WRITE;
    }

    /** The writer of the read-write lock on the lock's name (a token with a TTL, like a lock key). */
    public static String writerKey(String lockKey) {
        return lockKey + WRITER;
    }

    /** The readers of the read-write lock on the lock's name: a lease set of tokens. */
    public static String readersKey(String lockKey) {
        return lockKey + READERS;
    }

    /** The writers waiting for the read-write lock on the lock's name: a lease set of tokens. */
    public static String writersWaitingKey(String lockKey) {
        return lockKey + WRITERS_WAITING;
    }

    /** The channel on which releases of the lock are announced. */
    public static String releaseChannel(String lockKey) {
        return lockKey + ":released";
    }

    static String escape(String name) {
        StringBuilder out = null;
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            String replacement = c == '%' ? "%25" : c == '{' ? "%7B" : c == '}' ? "%7D" : null;
            if (replacement != null && out == null) {
                out = new StringBuilder(name.length() + 8).append(name, 0, i);
            }
            if (out != null) {
                if (replacement != null) {
                    out.append(replacement);
                } else {
                    out.append(c);
                }
            }
        }
        return out == null ? name : out.toString();
    }
}
