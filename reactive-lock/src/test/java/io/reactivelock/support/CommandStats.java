package io.reactivelock.support;

/** Reads how often Redis ran a command, from {@code INFO commandstats} (commands run by scripts included). */
public final class CommandStats {

    private CommandStats() {}

    /** The calls of {@code command} (lower case, e.g. {@code evalsha}) since start or {@code CONFIG RESETSTAT}. */
    public static long calls(RedisServer redis, String command) {
        String prefix = "cmdstat_" + command + ":calls=";
        for (String line : redis.call("INFO", "commandstats").split("\r?\n")) {
            if (line.startsWith(prefix)) {
                return Long.parseLong(line.substring(prefix.length()).split(",")[0]);
            }
        }
        return 0;
    }
}
