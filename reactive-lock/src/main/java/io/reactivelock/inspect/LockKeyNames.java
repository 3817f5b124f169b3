package io.reactivelock.inspect;

import io.reactivelock.internal.Arguments;
import io.reactivelock.internal.LockKeys;
import org.jspecify.annotations.Nullable;

/**
 * Reads lock names back from lock keys: the {@code SCAN} pattern of the lock keys under a prefix,
 * and the name a key belongs to. {@link LockKeys} stays the authority on the layout: a key counts as
 * a lock key only if {@link LockKeys#lockKey} gives it back for the decoded name.
 */
final class LockKeyNames {

    private final LockKeys keys;
    private final String start;
    private final String pattern;

    LockKeyNames(String prefix) {
        this.keys = new LockKeys(prefix);
        this.start = prefix + ":{";
        // Lock keys end with the closing brace of the hash tag; their :fence, :queue and :waiters
        // keys do not, so they are not matched.
        this.pattern = globLiteral(start) + "*}";
    }

    /** The {@code SCAN MATCH} pattern of every lock key under the prefix. */
    String pattern() {
        return pattern;
    }

    /** The lock name whose lock key is {@code key}, or {@code null} if {@code key} is not one. */
    @Nullable String nameOf(String key) {
        if (key.length() < start.length() + 2 || !key.startsWith(start) || !key.endsWith("}")) {
            return null;
        }
        String name = unescape(key.substring(start.length(), key.length() - 1));
        try {
            Arguments.checkName(name);
        } catch (IllegalArgumentException notAName) {
            return null;
        }
        return keys.lockKey(name).equals(key) ? name : null;
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
