package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisCommandExecutionException;
import io.reactivelock.LockLease;
import io.reactivelock.LockListener;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.support.RecordingListener;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

/**
 * What a holder's lease says after each renewal, and what the holder is told when a renewal fails: valid for the TTL from when the renewal was sent,
 * so later than before the renewal and no later than the TTL from when its success was told. A
 * lease the renewals did not extend would run out at its first TTL under a body that Redis still
 * lets hold the lock; one extended past the TTL from the reply would outlive the lock in Redis.
 */
@WithRedis
class RenewedLeaseTest {

    private static final Duration TTL = Duration.ofSeconds(30);

    @Test
    void eachRenewalMovesTheLeaseLaterAndNoFurtherThanTheTtlFromWhenItSucceeded(RedisServer redis) {
        AtomicReference<LockLease> held = new AtomicReference<>();
        // Per renewal heard: the lease's end before it was extended (the grant's or the last
        // renewal's), its end after, and when the success was told.
        List<long[]> renewals = new CopyOnWriteArrayList<>();
        AtomicLong last = new AtomicLong();
        Sinks.Empty<Void> thirdRenewal = Sinks.empty();
        LockListener listener = new LockListener() {
            @Override
            public void renewed(String name) {
                long heardAt = System.nanoTime();
                long validUntil = held.get().validUntilNanos();
                renewals.add(new long[] {last.getAndSet(validUntil), validUntil, heardAt});
                if (renewals.size() == 3) {
                    thirdRenewal.tryEmitEmpty();
                }
            }
        };
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                .renewalInterval(Duration.ofMillis(50)).listener(listener).build())) {
            lock.withLock("a", TTL, lease -> {
                assertThat(lease.name()).isEqualTo("a");
                held.set(lease);
                last.set(lease.validUntilNanos());
                return thirdRenewal.asMono();
            }).block(Duration.ofSeconds(10));
        }
        assertThat(renewals).hasSizeGreaterThanOrEqualTo(3);
        for (long[] r : renewals.subList(0, 3)) {
            assertThat(r[1]).as("the lease's end after a renewal, against its end before").isGreaterThan(r[0]);
            assertThat(r[1]).as("the lease's end after a renewal, against the TTL from when its success was told")
                    .isLessThanOrEqualTo(r[2] + TTL.toNanos());
        }
    }

    @Test
    void aRenewalThatFindsTheLockTakenEndsTheBodyWithLockLostSayingSoAndTellsTheListener(RedisServer redis) {
        RecordingListener heard = new RecordingListener();
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                .renewalInterval(Duration.ofMillis(50)).listener(heard).build())) {
            StepVerifier.create(lock.withLock("a", TTL, Mono.never()))
                    .expectSubscription()
                    .then(() -> await().until(() -> "1".equals(redis.call("EXISTS", "lock:{a}"))))
                    .then(() -> redis.call("SET", "lock:{a}", "outsider", "PX", "60000"))
                    .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockLostException.class).hasNoCause()
                            .hasMessage("Lost lock 'a': it expired or another holder took it"))
                    .verify(Duration.ofSeconds(10));
        }
        assertThat(heard.list).as("what the listener heard, renewals aside").filteredOn(e -> !e.startsWith("renewed"))
                .containsExactly("acquired a", "lost a", "released a");
        assertThat(redis.call("GET", "lock:{a}")).as("the other holder's lock, left alone").isEqualTo("outsider");
    }

    @Test
    void aRenewalThatRedisRefusesWithAPermanentErrorEndsTheBodyWithLockLostCausedByItAndTellsTheListener(RedisServer redis) {
        RecordingListener heard = new RecordingListener();
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                .renewalInterval(Duration.ofMillis(50)).listener(heard).build())) {
            StepVerifier.create(lock.withLock("a", TTL, Mono.never()))
                    .expectSubscription()
                    .then(() -> await().until(() -> "1".equals(redis.call("EXISTS", "lock:{a}"))))
                    // The lock key turned into a hash: the renewal's GET fails with WRONGTYPE, which no retry mends.
                    .then(() -> redis.call("EVAL", "redis.call('DEL', KEYS[1]) return redis.call('HSET', KEYS[1], 'f', 'v')",
                            "1", "lock:{a}"))
                    .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockLostException.class)
                            .hasMessage("Lost lock 'a': renewal failed")
                            .cause().isInstanceOf(RedisCommandExecutionException.class).hasMessageContaining("WRONGTYPE"))
                    .verify(Duration.ofSeconds(10));
        }
        assertThat(heard.list).as("what the listener heard, renewals aside").filteredOn(e -> !e.startsWith("renewed"))
                .containsExactly("acquired a", "lost a", "released a");
    }
}
