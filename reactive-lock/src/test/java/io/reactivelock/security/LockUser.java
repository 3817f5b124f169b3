package io.reactivelock.security;

import io.lettuce.core.RedisURI;
import io.reactivelock.support.RedisServer;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The least-privilege Redis user of docs/security.md: the ACL rules a lock user
 * needs with the default key prefix, every mode included. docs/security.md quotes {@link #RULES},
 * {@link #RULES_WITH_SETINFO_ONLY} and {@link #RULES_WITHOUT_HANDSHAKE_SUBCOMMANDS} (one line per
 * server line); {@code ReadmeSecuritySectionTest} checks that it still does.
 */
final class LockUser {

    /**
     * Commands the scripts and the connections use, the lock keys and the release channels, and
     * nothing else. {@code resetchannels} matters before Redis 7, whose users could publish and
     * subscribe anywhere by default.
     */
    static final String RULES = "resetchannels -@all +hello +client|setinfo +client|maint_notifications +evalsha +eval +get +set +del +pexpire +pttl +time +info +wait"
            + " +publish +subscribe +unsubscribe +lindex +lpop +rpush +lrem +hget +hset +hdel +zadd +zrem +zpopmin +zremrangebyscore +zscore +zrange +zcard ~lock:* &lock:*";

    /**
     * The subcommands Lettuce sends when it connects. Redis 6.2 checks the ACL before it looks the
     * subcommand up, so it needs these rules even for subcommands it does not have. Redis 7.0 and
     * later refuse a rule naming a subcommand they do not have, and refuse such a subcommand itself
     * before any ACL check, so they need only the ones they have.
     */
    static final List<String> HANDSHAKE_SUBCOMMANDS = List.of("+client|setinfo", "+client|maint_notifications");

    /** {@link #RULES} for a server that has none of {@link #HANDSHAKE_SUBCOMMANDS}, such as Redis 7.0. */
    static final String RULES_WITHOUT_HANDSHAKE_SUBCOMMANDS = without(HANDSHAKE_SUBCOMMANDS);

    /**
     * {@link #RULES} for a server that has {@code CLIENT SETINFO} (Redis 7.2 on) but not
     * {@code CLIENT MAINT_NOTIFICATIONS}: Redis 7.2 and 7.4, Valkey 7.2 to 8.x.
     */
    static final String RULES_WITH_SETINFO_ONLY = without(List.of("+client|maint_notifications"));

    /** Every line the README shows, one of which each server line takes. */
    static final List<String> README_LINES = List.of(RULES, RULES_WITH_SETINFO_ONLY, RULES_WITHOUT_HANDSHAKE_SUBCOMMANDS);

    static final String NAME = "lock-user";
    static final String PASSWORD = "lock-user-password";
    private static final String PROBE = "acl-rule-probe";

    private LockUser() {}

    /** Creates (or redefines) {@code user} with {@code rules} on {@code redis}. */
    static void create(RedisServer redis, String user, String password, String rules) {
        List<String> command = new ArrayList<>(List.of("ACL", "SETUSER", user, "reset", "on", ">" + password));
        command.addAll(List.of(rules.split(" ")));
        redis.call(command.toArray(String[]::new));
    }

    /** Creates the lock user with {@link #rules} of {@code redis}. */
    static void create(RedisServer redis) {
        create(redis, NAME, PASSWORD, rules(redis));
    }

    /** {@link #RULES} less each of {@link #HANDSHAKE_SUBCOMMANDS} that {@code redis} refuses as unknown. */
    static String rules(RedisServer redis) {
        return without(HANDSHAKE_SUBCOMMANDS.stream().filter(rule -> !accepts(redis, rule)).toList());
    }

    private static boolean accepts(RedisServer redis, String rule) {
        try {
            redis.call("ACL", "SETUSER", PROBE, rule);
            return true;
        } catch (IllegalStateException e) {
            if (e.getMessage().contains("Unknown command")) {
                return false;
            }
            throw e;
        } finally {
            redis.call("ACL", "DELUSER", PROBE);
        }
    }

    private static String without(List<String> refused) {
        return Stream.of(RULES.split(" ")).filter(rule -> !refused.contains(rule)).collect(Collectors.joining(" "));
    }

    /** The URI of {@code redis} authenticating as {@code user}. */
    static RedisURI uri(RedisServer redis, String user, String password) {
        return RedisURI.builder(redis.uri()).withAuthentication(user, password.toCharArray()).build();
    }

    /** The URI of {@code redis} authenticating as the lock user. */
    static RedisURI uri(RedisServer redis) {
        return uri(redis, NAME, PASSWORD);
    }
}
