package io.reactivelock.bench;

import io.reactivelock.support.RedisServer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;

/** Redis-side counters: {@code INFO commandstats} deltas and a MONITOR sample of who issues commands. */
final class RedisStats {

    private final RedisServer redis;

    RedisStats(RedisServer redis) {
        this.redis = redis;
    }

    /** Empties the server (every key); for cells whose keys and memory are measured from an empty server. */
    void flushAll() {
        redis.call("FLUSHALL");
    }

    void reset() {
        redis.call("CONFIG", "RESETSTAT");
    }

    /**
     * Calls per command since the last {@link #reset()}, from {@code INFO commandstats}, without
     * the harness's own INFO and CONFIG RESETSTAT. Counts every executed command, including those a Lua
     * script runs with {@code redis.call}.
     */
    Map<String, Long> commandCalls() {
        return parseCommandStats(redis.call("INFO", "commandstats"));
    }

    /**
     * Microseconds Redis spent executing each command since the last {@link #reset()} ({@code usec}
     * of {@code INFO commandstats}: the server's execution time, without reading, parsing and
     * writing); a script's time includes the commands it runs, which are also counted on their own.
     */
    Map<String, Long> commandMicros() {
        return parseCommandStats(redis.call("INFO", "commandstats"), "usec=");
    }

    static Map<String, Long> parseCommandStats(String info) {
        return parseCommandStats(info, "calls=");
    }

    private static Map<String, Long> parseCommandStats(String info, String field) {
        Map<String, Long> calls = new TreeMap<>();
        for (String line : info.split("\r?\n")) {
            if (!line.startsWith("cmdstat_")) {
                continue;
            }
            String name = line.substring("cmdstat_".length(), line.indexOf(':'));
            if (name.equals("info") || name.startsWith("config")) { // Redis 7 names it config|resetstat
                continue;
            }
            int at = line.indexOf(field) + field.length();
            int end = line.indexOf(',', at);
            calls.put(name, Long.parseLong(line.substring(at, end < 0 ? line.length() : end)));
        }
        return calls;
    }

    /** CPU seconds the redis-server process has used (user + system), from {@code INFO cpu}. */
    double cpuSeconds() {
        double total = 0;
        for (String line : redis.call("INFO", "cpu").split("\r?\n")) {
            if (line.startsWith("used_cpu_sys:") || line.startsWith("used_cpu_user:")) {
                total += Double.parseDouble(line.substring(line.indexOf(':') + 1).trim());
            }
        }
        return total;
    }

    /**
     * What Redis holds at one moment: {@code used_memory}, keys, pub/sub channels and patterns
     * with a subscriber ({@code PUBSUB CHANNELS}, {@code NUMPAT}), and from {@code CLIENT LIST}
     * the connections (this one left out), those with a subscription, and their subscriptions
     * ({@code sub} + {@code psub} + {@code ssub}).
     */
    record Snapshot(long usedMemory, long keys, long channels, long patterns, long clients, long subscribedClients,
            long subscriptions) {}

    Snapshot snapshot() {
        long usedMemory = Long.parseLong(info("memory", "used_memory"));
        long keys = Long.parseLong(redis.call("DBSIZE").trim());
        long channels = redis.callList("PUBSUB", "CHANNELS").size();
        long patterns = Long.parseLong(redis.call("PUBSUB", "NUMPAT").trim());
        long clients = -1; // the connection of CLIENT LIST itself
        long subscribedClients = 0;
        long subscriptions = 0;
        for (String line : redis.call("CLIENT", "LIST").split("\r?\n")) {
            if (line.isBlank()) {
                continue;
            }
            clients++;
            long subs = 0;
            for (String field : line.split(" ")) {
                if (field.startsWith("sub=") || field.startsWith("psub=") || field.startsWith("ssub=")) {
                    subs += Long.parseLong(field.substring(field.indexOf('=') + 1));
                }
            }
            subscriptions += subs;
            if (subs > 0) {
                subscribedClients++;
            }
        }
        return new Snapshot(usedMemory, keys, channels, patterns, clients, subscribedClients, subscriptions);
    }

    String info(String section, String field) {
        for (String line : redis.call("INFO", section).split("\r?\n")) {
            if (line.startsWith(field + ":")) {
                return line.substring(field.length() + 1).trim();
            }
        }
        return "?";
    }

    /**
     * Watches MONITOR for {@code millis} and returns {commands sent by clients, commands run
     * inside Lua scripts}: commandstats counts both, only the first are round trips.
     */
    long[] monitorSample(long millis) {
        long[] counts = new long[2];
        try (Socket socket = new Socket(redis.host(), redis.port())) {
            socket.setSoTimeout(50);
            OutputStream out = socket.getOutputStream();
            out.write("MONITOR\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8), 1 << 16);
            long deadline = System.nanoTime() + millis * 1_000_000;
            boolean started = false;
            while (System.nanoTime() < deadline) {
                String line;
                try {
                    line = in.readLine();
                } catch (SocketTimeoutException e) {
                    continue;
                }
                if (line == null) {
                    break;
                }
                if (!started) {
                    started = line.startsWith("+OK");
                    continue;
                }
                int open = line.indexOf('[');
                if (open < 0) {
                    continue;
                }
                if (line.startsWith("lua]", line.indexOf(' ', open) + 1)) {
                    counts[1]++;
                } else {
                    counts[0]++;
                }
            }
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return counts;
    }
}
