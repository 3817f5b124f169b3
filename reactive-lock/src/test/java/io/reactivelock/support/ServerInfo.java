package io.reactivelock.support;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The name and version fields of an {@code INFO server} reply. Valkey answers
 * {@code server_name:valkey} and {@code valkey_version:8.0.1} besides {@code redis_version:7.2.4}
 * (the Redis version it is compatible with); Redis has {@code redis_version} only (and
 * {@code server_name:redis} from 8.0 on).
 */
record ServerInfo(Map<String, String> fields) {

    private static final List<String> NAMES = List.of("redis_version", "server_name", "valkey_version");

    static ServerInfo of(String infoServer) {
        Map<String, String> fields = new LinkedHashMap<>();
        infoServer.lines().forEach(line -> {
            int colon = line.indexOf(':');
            if (colon > 0 && NAMES.contains(line.substring(0, colon))) {
                fields.put(line.substring(0, colon), line.substring(colon + 1).trim());
            }
        });
        if (!fields.containsKey("redis_version")) {
            throw new IllegalStateException("INFO server has no redis_version: " + infoServer);
        }
        return new ServerInfo(Map.copyOf(fields));
    }

    boolean isValkey() {
        return fields.containsKey("valkey_version");
    }

    /** The server's own version: {@code valkey_version} on Valkey, {@code redis_version} elsewhere. */
    String version() {
        return isValkey() ? fields.get("valkey_version") : fields.get("redis_version");
    }

    /** The fields as {@code name:value} pairs, in a fixed order. */
    String fieldsLine() {
        return NAMES.stream().filter(fields::containsKey).map(name -> name + ":" + fields.get(name))
                .collect(Collectors.joining(" "));
    }

    @Override
    public String toString() {
        return isValkey() ? "Valkey " + version() + " (redis_version:" + fields.get("redis_version") + ")" : "Redis " + version();
    }
}
