package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.cluster.SlotHash;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class LockKeysTest {

    private static final List<String> TRICKY = List.of("a", "}", "{", "}x", "{}", "a}b{c", "%7D", "%", "%25",
            "*", "?", "[a-z]", "lock:{x}", "\u0000", "\n", "ü", "\uD83D\uDD12", " ", "a b");

    private final LockKeys keys = new LockKeys("lock");

    @Test
    void aPlainNameIsItsOwnHashTag() {
        assertThat(keys.lockKey("order:42")).isEqualTo("lock:{order:42}");
        assertThat(LockKeys.fenceKey(keys.lockKey("order:42"))).isEqualTo("lock:{order:42}:fence");
    }

    @Test
    void lockAndFenceKeysShareAHashSlotWhateverTheName() {
        for (String name : TRICKY) {
            String lockKey = keys.lockKey(name);
            assertThat(SlotHash.getSlot(LockKeys.fenceKey(lockKey)))
                    .as("slot of %s", name)
                    .isEqualTo(SlotHash.getSlot(lockKey))
                    .isEqualTo(SlotHash.getSlot(LockKeys.escape(name)));
        }
    }

    @Test
    void distinctNamesNeverShareAKey() {
        Set<String> seen = new HashSet<>();
        for (String name : TRICKY) {
            assertThat(seen.add(keys.lockKey(name))).as("key of %s is new", name).isTrue();
        }
    }

    @Test
    void everyKeyStartsWithThePrefixAndItsHashTagIsNeverEmpty() {
        for (String name : TRICKY) {
            String key = keys.lockKey(name);
            assertThat(key).startsWith("lock:{");
            String tag = key.substring(key.indexOf('{') + 1, key.indexOf('}', key.indexOf('{')));
            assertThat(tag).as("hash tag of %s", name).isEqualTo(LockKeys.escape(name)).isNotEmpty();
        }
    }
}
