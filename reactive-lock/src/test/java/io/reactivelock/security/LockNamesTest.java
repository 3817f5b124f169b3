package io.reactivelock.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.cluster.SlotHash;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.spi.Arguments;
import io.reactivelock.redis.RedisInternals;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Sinks;

/**
 * Property-style checks over hostile lock names (seeded, so a failure replays): each name either
 * is rejected at once with {@link IllegalArgumentException} or names a lock of its own, whose keys
 * all stay under the prefix and share one Cluster hash slot.
 */
@WithRedis
class LockNamesTest {

    private static final long SEED = 0x5EC0_2026L;
    private static final int GENERATED = 20_000;
    private static final String HOSTILE = "{}*?[]^-\\%:\"' \t\r\n\0\u007f\u0085\u2028\ufeff";
    private static final List<String> ADVERSARIAL = List.of("{", "}", "{}", "}{", "%", "%25", "%7B", "%7D", "%257B",
            "a{b}c", "a%7Bb%7Dc", "*", "?", "[a-z]", "lock:*", "} :fence", "a}:fence", "\0", " ", "\u00e9", "e\u0301",
            "\ud83d\udd12", "x".repeat(ReactiveLock.MAX_NAME_LENGTH));


    /** Names of every kind: empty to too long, random Unicode, control characters, glob and hash-tag characters. */
    private static List<String> generatedNames() {
        Random random = new Random(SEED);
        List<String> names = new ArrayList<>(ADVERSARIAL);
        while (names.size() < GENERATED) {
            int length = random.nextInt(10) == 0 ? random.nextInt(700) : random.nextInt(12);
            StringBuilder name = new StringBuilder();
            while (name.length() < length) {
                int kind = random.nextInt(20);
                if (kind < 4) {
                    name.append(HOSTILE.charAt(random.nextInt(HOSTILE.length())));
                } else if (kind < 7) {
                    name.append((char) random.nextInt(0x20));
                } else if (kind < 10) {
                    name.appendCodePoint(0x10000 + random.nextInt(0x10FFFF - 0x10000));
                } else if (kind < 11) {
                    name.append((char) (0xD800 + random.nextInt(0x800))); // a lone surrogate
                } else if (kind < 13) {
                    name.append(random.nextBoolean() ? "%7B" : "%7D");
                } else {
                    name.append((char) random.nextInt(0x10000));
                }
            }
            names.add(name.toString());
        }
        return names;
    }

    /** The documented rule, stated independently of the code under test. */
    private static boolean shouldAccept(String name) {
        return !name.isEmpty() && name.length() <= ReactiveLock.MAX_NAME_LENGTH
                && name.codePoints().noneMatch(cp -> cp >= Character.MIN_SURROGATE && cp <= Character.MAX_SURROGATE);
    }

    private static boolean accepted(String name) {
        try {
            Arguments.checkName(name);
            return true;
        } catch (IllegalArgumentException e) {
            assertThat(e).hasMessageStartingWith("lock name");
            return false;
        }
    }

    @Test
    void everyNameIsAcceptedOrRejectedWithAClearErrorByTheDocumentedRule() {
        int rejected = 0;
        for (String name : generatedNames()) {
            if (accepted(name) != shouldAccept(name)) {
                fail("seed %x: name %s was %s", SEED, escapeForMessage(name), shouldAccept(name) ? "rejected" : "accepted");
            }
            rejected += accepted(name) ? 0 : 1;
        }
        assertThat(rejected).as("the generator covers both outcomes").isBetween(GENERATED / 20, GENERATED / 2);
    }

    @Test
    void distinctAcceptedNamesNeverShareAKeyAndEveryKeyStaysUnderThePrefixInOneSlot() {
        Map<String, String> nameByKeyBytes = new HashMap<>();
        for (String name : generatedNames()) {
            if (!shouldAccept(name)) {
                continue;
            }
            String key = RedisInternals.lockKey(name);
            // Redis sees bytes: compare the UTF-8 forms, not the Java strings.
            String previous = nameByKeyBytes.put(new String(key.getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1), name);
            if (previous != null && !previous.equals(name)) {
                fail("seed %x: %s and %s share the key %s", SEED, escapeForMessage(previous), escapeForMessage(name), key);
            }
            assertThat(key).startsWith("lock:{").endsWith("}");
            assertThat(key.indexOf('{')).as("the hash tag opens right after the prefix").isEqualTo(5);
            assertThat(key.indexOf('}')).as("the name cannot close the hash tag early").isEqualTo(key.length() - 1);
            int slot = SlotHash.getSlot(key);
            for (String related : List.of(RedisInternals.fenceKey(key), RedisInternals.queueKey(key), RedisInternals.waitersKey(key),
                    RedisInternals.releaseChannel(key))) {
                assertThat(related).startsWith(key);
                assertThat(SlotHash.getSlot(related)).isEqualTo(slot);
            }
        }
        assertThat(nameByKeyBytes).hasSizeGreaterThan(GENERATED / 2);
    }

    @Test
    void aSampleOfHostileNamesAreAllHeldAtOnceAsSeparateLocksByTheLeastPrivilegeUser(RedisServer redis) {
        LockUser.create(redis);
        redis.call("ACL", "LOG", "RESET");
        Set<String> sample = new LinkedHashSet<>(ADVERSARIAL);
        List<String> generated = generatedNames();
        for (int i = ADVERSARIAL.size(); sample.size() < 200; i += 97) {
            sample.add(generated.get(i));
        }
        // Zero acquire timeout: a name whose key collided with another's would fail instead of waiting.
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(LockUser.uri(redis),
                LockOptions.builder().acquireTimeout(Duration.ZERO).build())) {
            Sinks.Empty<Void> releaseAll = Sinks.empty();
            AtomicInteger held = new AtomicInteger();
            AtomicInteger done = new AtomicInteger();
            List<Throwable> errors = new ArrayList<>();
            int accepted = 0;
            for (String name : sample) {
                if (!shouldAccept(name)) {
                    assertThatThrownBy(() -> lock.withLock(name, Duration.ofSeconds(30), releaseAll.asMono()))
                            .isInstanceOf(IllegalArgumentException.class);
                    continue;
                }
                accepted++;
                lock.withLock(name, Duration.ofSeconds(30), lease -> {
                    held.incrementAndGet();
                    return releaseAll.asMono();
                }).subscribe(null, error -> {
                    synchronized (errors) {
                        errors.add(error);
                    }
                }, done::incrementAndGet);
            }
            int expected = accepted;
            await().pollInterval(Duration.ofMillis(20)).until(() -> held.get() == expected || !errors.isEmpty());
            assertThat(errors).isEmpty();
            assertThat(redis.call("DBSIZE")).as("one lock key and one fencing record per name").isEqualTo(Integer.toString(2 * expected));
            releaseAll.tryEmitEmpty();
            await().pollInterval(Duration.ofMillis(20)).until(() -> done.get() == expected);
            assertThat(redis.callList("ACL", "LOG")).as("every key and channel matched ~lock:* and &lock:*").isEmpty();
        }
    }

    private static String escapeForMessage(String name) {
        StringBuilder out = new StringBuilder("\"");
        name.codePoints().limit(80).forEach(cp -> out.append(cp >= 0x20 && cp < 0x7f ? Character.toString(cp) : String.format("\\u{%x}", cp)));
        return out.append(name.length() > 80 ? "...\"" : "\"").toString();
    }
}
