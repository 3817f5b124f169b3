package io.reactivelock.nemesis;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * One event line from a client JVM to the parent: {@code @KIND key=value key=value ...}. Values never
 * contain spaces or {@code =} (names, ids, numbers, outcome words), so the format needs no escaping.
 * Lines without the {@code @} prefix (a JVM warning on standard output) are not events.
 */
record Line(String kind, Map<String, String> fields) {

    private static final String PREFIX = "@";

    /** The line for {@code kind} and the alternating keys and values. */
    static String of(String kind, Object... keysAndValues) {
        StringBuilder line = new StringBuilder(PREFIX).append(kind);
        for (int i = 0; i < keysAndValues.length; i += 2) {
            line.append(' ').append(keysAndValues[i]).append('=').append(keysAndValues[i + 1]);
        }
        return line.toString();
    }

    /** The event a line holds, or empty when it is not one. */
    static Optional<Line> parse(String text) {
        if (!text.startsWith(PREFIX)) {
            return Optional.empty();
        }
        String[] parts = text.substring(PREFIX.length()).split(" ");
        Map<String, String> fields = new LinkedHashMap<>();
        for (int i = 1; i < parts.length; i++) {
            int eq = parts[i].indexOf('=');
            if (eq < 0) {
                return Optional.empty();
            }
            fields.put(parts[i].substring(0, eq), parts[i].substring(eq + 1));
        }
        return Optional.of(new Line(parts[0], fields));
    }

    String text(String key) {
        String value = fields.get(key);
        if (value == null) {
            throw new IllegalArgumentException("no " + key + " in " + this);
        }
        return value;
    }

    long number(String key) {
        return Long.parseLong(text(key));
    }
}
