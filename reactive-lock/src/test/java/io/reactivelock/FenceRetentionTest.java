package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.TcpProxy;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The fencing record lives the TTL plus 60 s from when it was written, no less and no more.
 * No more: memory stays bounded, every key a primitive leaves in Redis after its holders released
 * expiring by itself (the other leftover-key checks leave fencing records out, so this is the one
 * that sees them). No less: while the record lives, tokens rise even when the server's clock is
 * behind the last token issued, across a release, an expiry and the next acquisition. The
 * retention is not configurable, so the bounds are read from each key's PTTL.
 */
@WithRedis
class FenceRetentionTest {

    private static final Duration TTL = Duration.ofSeconds(10);
    private static final long RETENTION_MILLIS = TTL.plusSeconds(60).toMillis();

    @Test
    void everyKeyLeftAfterTheReleasesOfEachPrimitiveExpiresWithinTheTtlPlusAMinuteAndEachFencingRecordNoSooner(
            RedisServer redis) {
        LockOptions options = LockOptions.builder().build();
        long start = System.nanoTime();
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), options)) {
            ReactiveReadWriteLock readWrite = lock.readWriteLock();
            List<Mono<?>> uses = List.of(
                    // A body that reads its fencing token: one that does not see the lease gets none, and no record.
                    lock.withLock("lock", TTL, lease -> Mono.fromCallable(lease::fencingToken).thenReturn(1)),
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
        // Each record was written after start: it has at least the retention less the time since then (1 ms of rounding).
        long atLeast = RETENTION_MILLIS - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) - 1;
        assertThat(pttl.keySet()).as("keys left, fencing records among them").contains("lock:{lock}:fence", "lock:{fair}:fence");
        assertThat(pttl).as("milliseconds each key left has to live (-1: never expires)")
                .allSatisfy((key, millis) -> assertThat(millis).as(key).isPositive().isLessThanOrEqualTo(RETENTION_MILLIS));
        assertThat(pttl).as("milliseconds each fencing record left has to live, at least " + atLeast)
                .allSatisfy((key, millis) -> assertThat(!key.endsWith(":fence") || millis >= atLeast).as(key + ": " + millis).isTrue());
    }

    /**
     * A server clock an hour behind the last token issued (a clock stepped back, or a failover to a
     * server whose clock is behind), made by a record an hour ahead of it: a holder that crashed (its
     * link frozen) leaves its lock to expire by its 1 s TTL, and the next holder's token, issued
     * once it has, is still above the crashed holder's. (An hour: however late the next holder
     * gets the lock, the clock has not caught up with the record, so only the record keeps the
     * token rising: with 30 s, the test passed once with the record kept for the TTL only, in a
     * run of 59 s on a loaded machine.)
     */
    @Test
    void tokensRiseAcrossAnExpiryWithinTheRetentionThoughTheServerClockIsBehindTheLastToken(RedisServer redis) {
        Duration ttl = Duration.ofSeconds(1);
        List<String> time = redis.callList("TIME").stream().map(String.class::cast).toList();
        long aheadOfTheClock = (Long.parseLong(time.get(0)) + 3600) * 1_000_000 + Long.parseLong(time.get(1));
        redis.call("SET", "lock:{expiring}:fence", Long.toString(aheadOfTheClock));
        try (TcpProxy proxy = TcpProxy.to(redis);
                ReactiveRedisLock crashing = ReactiveRedisLock.create(proxy.uri(), LockOptions.builder().build());
                ReactiveRedisLock next = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                        .acquireTimeout(Duration.ofSeconds(20)).build())) {
            Sinks.One<Long> crashed = Sinks.one();
            crashing.withLock("expiring", ttl, lease -> {
                proxy.freeze();
                crashed.tryEmitValue(lease.fencingToken());
                return Mono.never();
            }).subscribe(value -> {}, error -> {});
            long first = crashed.asMono().block(Duration.ofSeconds(10));
            long second = next.withLock("expiring", ttl, lease -> Mono.just(lease.fencingToken())).block(Duration.ofSeconds(20));
            proxy.unfreeze();

            assertThat(first).as("the crashed holder's token").isGreaterThan(aheadOfTheClock);
            assertThat(second).as("the next holder's token, after the crashed holder's expired").isGreaterThan(first);
        }
    }

    /**
     * A fair release writes the next fencing token with the retention of its own lease; the holder
     * it hands the lock to keeps the record for the retention of its own: a waiter of another
     * process when it claims the lock, one of the releaser's process in the hand-off itself. With a
     * 1 s lease handing over to a 5-minute one, the record would otherwise be gone 61 s into it.
     */
    @ParameterizedTest(name = "a waiter in {0}")
    @ValueSource(strings = {"another process", "the releaser's process"})
    void aFairHandOffKeepsTheFencingRecordForTheNextHoldersLease(String where, RedisServer redis) {
        Duration shortLease = Duration.ofSeconds(1);
        Duration longLease = Duration.ofMinutes(5);
        LockOptions options = LockOptions.builder().acquireTimeout(Duration.ofSeconds(20)).build();
        try (ReactiveRedisLock releaser = ReactiveRedisLock.create(redis.uri(), options);
                ReactiveRedisLock other = ReactiveRedisLock.create(redis.uri(), options)) {
            ReactiveRedisLock waiter = where.equals("another process") ? other : releaser;
            Sinks.Empty<Void> release = Sinks.empty();
            releaser.fair().withLock("handed", shortLease, lease -> release.asMono()).subscribe();
            await().atMost(Duration.ofSeconds(10)).until(() -> "1".equals(redis.call("EXISTS", "lock:{handed}")));
            Sinks.One<Long> entered = Sinks.one();
            Sinks.Empty<Void> done = Sinks.empty();
            waiter.fair().withLock("handed", longLease, lease -> {
                entered.tryEmitValue(lease.fencingToken());
                return done.asMono();
            }).subscribe();
            await().atMost(Duration.ofSeconds(10)).until(() -> "1".equals(redis.call("LLEN", "lock:{handed}:queue")));

            release.tryEmitEmpty();
            assertThat(entered.asMono().block(Duration.ofSeconds(10))).as("the waiter's fencing token").isPositive();
            long pttl = Long.parseLong(redis.call("PTTL", "lock:{handed}:fence"));
            done.tryEmitEmpty();

            assertThat(pttl).as("ms the fencing record has left once the 5-minute holder is in: more than its lease, not the"
                    + " 1 s releaser's 61 s").isGreaterThan(longLease.toMillis());
        }
    }
}
