package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/** Bad arguments fail when {@code withLock} is called, with a typed error that says what is wrong. */
@WithRedis
class WithLockArgumentsTest {

    private static final Duration TTL = Duration.ofSeconds(10);

    private ReactiveRedisLock lock;

    @BeforeEach
    void setUp(RedisServer redis) {
        lock = ReactiveRedisLock.create(redis.uri());
    }

    @AfterEach
    void tearDown() {
        lock.close();
    }

    @Test
    void nullNameIsRejected() {
        assertThatThrownBy(() -> lock.withLock(null, TTL, Mono.just(1)))
                .isInstanceOf(NullPointerException.class).hasMessage("name");
    }

    @Test
    void emptyNameIsRejected() {
        assertThatThrownBy(() -> lock.withLock("", TTL, Mono.just(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 to 512");
    }

    @Test
    void nameOverTheLimitIsRejectedAndTheLimitItselfAccepted() {
        assertThatThrownBy(() -> lock.withLock("x".repeat(513), TTL, Mono.just(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got 513");
        assertThatCode(() -> lock.withLock("x".repeat(512), TTL, Mono.just(1)).block(TTL)).doesNotThrowAnyException();
    }

    @Test
    void nameWithAnUnpairedSurrogateIsRejected() {
        assertThatThrownBy(() -> lock.withLock("a\uD800b", TTL, Mono.just(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("surrogate");
        assertThatThrownBy(() -> lock.withLock("a\uDC00", TTL, Mono.just(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("surrogate");
    }

    @Test
    void nullTtlIsRejected() {
        assertThatThrownBy(() -> lock.withLock("a", null, Mono.just(1)))
                .isInstanceOf(NullPointerException.class).hasMessage("ttl");
    }

    @Test
    void zeroNegativeAndTooShortTtlsAreRejected() {
        for (Duration ttl : new Duration[] {Duration.ZERO, Duration.ofMillis(-5), Duration.ofMillis(99)}) {
            assertThatThrownBy(() -> lock.withLock("a", ttl, Mono.just(1)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 100 ms");
        }
    }

    @Test
    void ttlAboveTheMaximumLeaseTimeIsRejected() {
        assertThatThrownBy(() -> lock.withLock("a", Duration.ofMinutes(11), Mono.just(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxLeaseTime");
    }

    @Test
    void aRenewalIntervalNotBelowTheTtlIsRejected(RedisServer redis) {
        ReactiveRedisLock fixedRenewal = ReactiveRedisLock.create(redis.uri(),
                LockOptions.builder().renewalInterval(Duration.ofSeconds(5)).build());
        try {
            assertThatThrownBy(() -> fixedRenewal.withLock("a", Duration.ofSeconds(5), Mono.just(1)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("renewalInterval");
            assertThatCode(() -> fixedRenewal.withLock("a", Duration.ofSeconds(6), Mono.just(1)))
                    .doesNotThrowAnyException();
        } finally {
            fixedRenewal.close();
        }
    }

    @Test
    void nullBodiesAreRejected() {
        assertThatThrownBy(() -> lock.withLock("a", TTL, (Mono<Object>) null))
                .isInstanceOf(NullPointerException.class).hasMessage("body");
        assertThatThrownBy(() -> lock.withLock("a", TTL, (Function<LockLease, Mono<Object>>) null))
                .isInstanceOf(NullPointerException.class).hasMessage("body");
    }
}
