package io.reactivelock.redis;

import io.reactivelock.spi.Arguments;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Reads names back from keys: the {@code SCAN} pattern of the keys that show a name is held, and the
 * name such a key belongs to. A name is held when one of these keys exists: its lock key
 * ({@code <prefix>:{<escaped name>}}), its semaphore's permits ({@link LockKeys#PERMITS}), its read-write
 * lock's writer ({@link LockKeys#WRITER}) or readers ({@link LockKeys#READERS}). {@link LockKeys} stays the
 * authority on the escaping: a key counts only if {@link LockKeys#lockKey} of the decoded name,
 * followed by one of those suffixes, gives it back.
 */
final class LockKeyNames {

    /** What follows the lock key in a key that shows its name is held; the lock key itself has nothing. */
    private static final List<String> HELD = List.of("", LockKeys.PERMITS, LockKeys.WRITER, LockKeys.READERS);

    private final LockKeys keys;
    private final String start;
    private final String pattern;

    LockKeyNames(String prefix) {
        this.keys = new LockKeys(prefix);
        this.start = prefix + ":{";
        // Only narrows what SCAN sends back (nameOf decides): the keys under the prefix that end as a
        // held key does. That leaves out the fencing records, the fair lines and the waiting writers.
        StringBuilder endings = new StringBuilder();
        for (String suffix : HELD) {
            char last = suffix.isEmpty() ? '}' : suffix.charAt(suffix.length() - 1);
            if (endings.indexOf(String.valueOf(last)) < 0) {
                endings.append(last);
            }
        }
        this.pattern = globLiteral(start) + "*[" + endings + "]";
    }

    /** The {@code SCAN MATCH} pattern of every key that shows a name under the prefix is held (and of a few others). */
    String pattern() {
        return pattern;
    }

    /**
     * The name that {@code key} shows held (as a lock, a semaphore or a read-write lock), or
     * {@code null} if {@code key} is no such key.
     */
    @Nullable String nameOf(String key) {
        if (!key.startsWith(start)) {
            return null;
        }
        // An escaped name has no closing brace: the first one ends the hash tag.
        int end = key.indexOf('}', start.length());
        if (end < 0 || !HELD.contains(key.substring(end + 1))) {
            return null;
        }
        String name = unescape(key.substring(start.length(), end));
        try {
            Arguments.checkName(name);
        } catch (IllegalArgumentException notAName) {
            return null;
        }
        return keys.lockKey(name).equals(key.substring(0, end + 1)) ? name : null;
    }

    /** Undoes the escaping of {@code %}, <code>{</code> and <code>}</code> in a lock key. */
    static String unescape(String escaped) {
        if (escaped.indexOf('%') < 0) {
            return escaped;
        }
        StringBuilder out = new StringBuilder(escaped.length());
        for (int i = 0; i < escaped.length(); i++) {
            char c = escaped.charAt(i);
            String code = c == '%' && i + 3 <= escaped.length() ? escaped.substring(i + 1, i + 3) : "";
            switch (code) {
                case "25" -> out.append('%');
                case "7B" -> out.append('{');
                case "7D" -> out.append('}');
                default -> {
                    out.append(c);
                    continue;
                }
            }
            i += 2;
        }
        return out.toString();
    }

    /** {@code text} as a Redis glob pattern that matches only itself. */
    private static String globLiteral(String text) {
        StringBuilder out = new StringBuilder(text.length() + 4);
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
                out.append('\\');
            }
            out.append(c);
        }
        return out.toString();
    }
}
