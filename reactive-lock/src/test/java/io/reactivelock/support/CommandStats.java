package io.reactivelock.support;

import java.util.Map;
import java.util.TreeMap;

/** Reads how often Redis ran a command, from {@code INFO commandstats} (commands run by scripts included). */
public final class CommandStats {

    private CommandStats() {}

    /** The calls of {@code command} (lower case, e.g. {@code evalsha}) since start or {@code CONFIG RESETSTAT}. */
    public static long calls(RedisServer redis, String command) {
        return all(redis).getOrDefault(command, 0L);
    }

    /** The calls of every command run since start or {@code CONFIG RESETSTAT}, by command (lower case). */
    public static Map<String, Long> all(RedisServer redis) {
        Map<String, Long> calls = new TreeMap<>();
        for (String line : redis.call("INFO", "commandstats").split("\r?\n")) {
            int colon = line.indexOf(":calls=");
            if (line.startsWith("cmdstat_") && colon > 0) {
                calls.put(line.substring("cmdstat_".length(), colon),
                        Long.parseLong(line.substring(colon + ":calls=".length()).split(",")[0]));
            }
        }
        return calls;
    }
}
