package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * Memory stays bounded: every key a primitive leaves in Redis after its holders released expires
 * by itself, the fencing record included, within the TTL plus the 60 s the README gives the
 * fencing record. The other leftover-key checks leave fencing records out, so this is the one
 * that sees them. The retention is not configurable, so the bound is read from each key's PTTL.
 */
@WithRedis
class FenceRetentionTest {

    private static final Duration TTL = Duration.ofSeconds(10);
    private static final long RETENTION_MILLIS = TTL.plusSeconds(60).toMillis();

    @Test
    void everyKeyLeftAfterTheReleasesOfEachPrimitiveExpiresWithinTheTtlPlusAMinute(RedisServer redis) {
        LockOptions options = LockOptions.builder().build();
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), options)) {
            ReactiveReadWriteLock readWrite = lock.readWriteLock();
            List<Mono<?>> uses = List.of(
                    lock.withLock("lock", TTL, Mono.just(1)),
                    lock.fair().withLock("fair", TTL, Mono.just(1)),
                    lock.semaphore(3).withPermits("permits", 2, TTL, Mono.just(1)),
                    readWrite.withWriteLock("doc", TTL, Mono.just(1)),
                    readWrite.withReadLock("doc", TTL, Mono.just(1)),
                    lock.multiLock().withLocks(List.of("m1", "m2"), TTL, Mono.just(1)));
            uses.forEach(use -> assertThat(use.block(Duration.ofSeconds(10))).isEqualTo(1));
        }

        Map<String, Long> pttl = new TreeMap<>();
        for (Object key : redis.callList("KEYS", "*")) {
            pttl.put((String) key, Long.parseLong(redis.call("PTTL", (String) key)));
        }
        assertThat(pttl.keySet()).as("keys left, fencing records among them").anyMatch(key -> key.endsWith(":fence"));
        assertThat(pttl).as("milliseconds each key left has to live (-1: never expires)")
                .allSatisfy((key, millis) -> assertThat(millis).as(key).isPositive().isLessThanOrEqualTo(RETENTION_MILLIS));
    }
}
