package io.reactivelock.security;

import io.lettuce.core.RedisURI;
import io.reactivelock.support.RedisServer;
import java.util.ArrayList;
import java.util.List;

/**
 * The least-privilege Redis user of the README's Security section: the ACL rules a lock user
 * needs with the default key prefix, every mode included. The README quotes {@link #RULES};
 * {@code ReadmeSecuritySectionTest} checks that it still does.
 */
final class LockUser {

    /**
     * Commands the scripts and the connections use, the lock keys and the release channels, and
     * nothing else. {@code resetchannels} matters before Redis 7, whose users could publish and
     * subscribe anywhere by default.
     */
    static final String RULES = "resetchannels -@all +hello +client|setinfo +client|maint_notifications +evalsha +eval +get +set +del +pexpire +time"
            + " +publish +subscribe +unsubscribe +lindex +lpop +rpush +lrem +hget +hset +hdel ~lock:* &lock:*";

    static final String NAME = "lock-user";
    static final String PASSWORD = "lock-user-password";

    private LockUser() {}

    /** Creates (or redefines) {@code user} with {@code rules} on {@code redis}. */
    static void create(RedisServer redis, String user, String password, String rules) {
        List<String> command = new ArrayList<>(List.of("ACL", "SETUSER", user, "reset", "on", ">" + password));
        command.addAll(List.of(rules.split(" ")));
        redis.call(command.toArray(String[]::new));
    }

    /** Creates the lock user with {@link #RULES}. */
    static void create(RedisServer redis) {
        create(redis, NAME, PASSWORD, RULES);
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
