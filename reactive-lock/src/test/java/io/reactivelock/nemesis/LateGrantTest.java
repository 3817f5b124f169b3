package io.reactivelock.nemesis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.TcpProxy;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * A grant that arrives late, with most of its lease already spent (it waited in a frozen Redis, or
 * on a slow network), as the nemesis soak saw: the holder must still be told when that lease runs
 * out (README, "Guarantees and limits", 2). Here every reply takes 1.2 s each way, so a 3 s lease
 * has 0.6 s left when the body enters, less than the 1 s renewal interval.
 */
@WithRedis
class LateGrantTest {

    private static final Duration TTL = Duration.ofSeconds(3);
    private static final Duration RENEWAL_INTERVAL = Duration.ofSeconds(1);
    private static final Duration ONE_WAY = Duration.ofMillis(1200);
    private static final Duration WAIT = Duration.ofSeconds(30);
    /** How late after the end of its lease a holder may be told: a late timer on a loaded machine, as in the fault tests. */
    private static final Duration TOLD_LATE = Duration.ofMillis(300);

    private TcpProxy proxy;
    private ReactiveRedisLock lock;

    @BeforeEach
    void setUp(RedisServer redis) {
        proxy = TcpProxy.to(redis);
        lock = ReactiveRedisLock.create(proxy.uri(), LockOptions.builder()
                .renewalInterval(RENEWAL_INTERVAL)
                .commandTimeout(Duration.ofSeconds(10))
                .acquireTimeout(WAIT)
                .build());
        // Redis caches the acquire and release scripts now, so that the late grant costs one round trip.
        lock.withLock("late", TTL, Mono.just("warm")).block(WAIT);
    }

    @AfterEach
    void tearDown() {
        lock.close();
        proxy.close();
    }

    @Test
    void aGrantThatArrivesWithLessThanARenewalIntervalLeftStillEndsTheBodyWhenItsLeaseRunsOut() {
        proxy.latency(ONE_WAY);
        AtomicReference<LockLease> lease = new AtomicReference<>();
        AtomicLong enteredAt = new AtomicLong();
        AtomicLong toldAt = new AtomicLong();
        AtomicLong bytesSentBeforeEntry = new AtomicLong(Long.MAX_VALUE);
        CompletableFuture<Object> holder = lock.withLock("late", TTL, granted -> {
                    bytesSentBeforeEntry.set(proxy.requestBytes());
                    enteredAt.set(System.nanoTime());
                    lease.set(granted);
                    return Mono.never();
                })
                .doOnError(error -> toldAt.set(System.nanoTime()))
                .toFuture();

        // The renewal goes out as the body enters, not one renewal interval later: the next bytes the lock sends.
        await().atMost(WAIT).pollInterval(Duration.ofMillis(5)).until(() -> proxy.requestBytes() > bytesSentBeforeEntry.get());
        assertThat(Duration.ofNanos(System.nanoTime() - enteredAt.get()))
                .as("from the body's entry to the renewal going out (a renewal interval: 1 s)").isLessThanOrEqualTo(TOLD_LATE);

        assertThat(holder).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
                .havingCause().isInstanceOf(LockLostException.class);
        assertThat(Duration.ofNanos(lease.get().validUntilNanos() - enteredAt.get()))
                .as("lease left when the body entered (the grant came late)").isLessThan(RENEWAL_INTERVAL);
        assertThat(Duration.ofNanos(toldAt.get() - lease.get().validUntilNanos()))
                .as("when the holder was told, after the end of its lease")
                .isLessThanOrEqualTo(TOLD_LATE);
    }
}
