package io.reactivelock.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.LockLease;
import io.reactivelock.LockListener;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.TcpProxy;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * A renewal extends the lease from when it was sent, not from when its reply came: Redis extended
 * the lock at some moment between the two, so only the send time is a bound the holder knows to
 * be early enough. Counted from a late reply, a holder whose link then freezes would go on
 * believing it holds the lock after Redis let it expire and gave it to another holder.
 */
@WithRedis
class LateRenewalReplyTest {

    /** Each way: a renewal's reply comes 800 ms after it was sent, 400 ms after Redis extended the lock. */
    private static final Duration ONE_WAY = Duration.ofMillis(400);
    private static final Duration TTL = Duration.ofSeconds(3);

    @Test
    void aHolderWhoseRenewalReplyCameLateNoLongerHoldsItsLeaseWhenAnotherHolderGetsTheLock(RedisServer redis) {
        Sinks.Empty<Void> renewed = Sinks.empty();
        try (TcpProxy proxy = TcpProxy.to(redis)) {
            warmUp(proxy);
            proxy.latency(ONE_WAY);
            // Grant sent at 0, in at 0.8 s (lease until 3 s); the first renewal, one interval later,
            // sent at 1.8 s, run by Redis at 2.2 s (the lock now expires at 5.2 s), its reply in at
            // 2.6 s: the lease runs until 4.8 s. Then the link freezes, so no renewal gets through
            // again: from the reply, the lease would have run until 5.6 s, 400 ms into the next
            // holder's, which gets the lock once it expires at 5.2 s.
            ReactiveRedisLock holder = ReactiveRedisLock.create(proxy.uri(), LockOptions.builder()
                    .renewalInterval(Duration.ofSeconds(1))
                    .listener(new LockListener() {
                        @Override
                        public void renewed(String name) {
                            proxy.freeze();
                            renewed.tryEmitEmpty();
                        }
                    })
                    .build());
            Disposable.Swap holding = Disposables.swap();
            ReactiveRedisLock next = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                    .backoff(Duration.ofMillis(5), Duration.ofMillis(20)).acquireTimeout(Duration.ofSeconds(20)).build());
            try {
                AtomicReference<LockLease> lease = new AtomicReference<>();
                Mono<Throwable> held = holder.withLock("late-reply", TTL, granted -> {
                            lease.set(granted);
                            return Mono.never();
                        })
                        .<Throwable>map(value -> new AssertionError("expected a lost lease, got " + value))
                        .onErrorResume(Mono::just)
                        .cache();
                holding.update(held.subscribe());
                renewed.asMono().block(Duration.ofSeconds(10));

                long nextEntered = next.withLock("late-reply", TTL, entered -> Mono.fromCallable(System::nanoTime))
                        .block(Duration.ofSeconds(20));
                proxy.unfreeze(); // the first holder's release, sent when it was told, goes through (and finds the lock not its own)

                long leaseLeftMillis = TimeUnit.NANOSECONDS.toMillis(lease.get().validUntilNanos() - nextEntered);
                assertThat(leaseLeftMillis)
                        .as("ms the first holder's lease still had to run when the next holder entered (from the reply: about +400)")
                        .isNotPositive();
                assertThat(held.block(Duration.ofSeconds(20))).isInstanceOf(LockLostException.class);
            } finally {
                proxy.unfreeze();
                holding.dispose(); // a holder still holding (the lease counted wrongly) would make its client's close wait
                next.close();
                holder.close();
            }
        }
    }

    /** One acquisition, renewal and release at no latency, so that Redis has the scripts cached (a cold one costs a round trip more). */
    private static void warmUp(TcpProxy proxy) {
        Sinks.Empty<Void> renewed = Sinks.empty();
        try (ReactiveRedisLock warm = ReactiveRedisLock.create(proxy.uri(), LockOptions.builder()
                .renewalInterval(Duration.ofMillis(100))
                .listener(new LockListener() {
                    @Override
                    public void renewed(String name) {
                        renewed.tryEmitEmpty();
                    }
                })
                .build())) {
            warm.withLock("warm-up", TTL, lease -> renewed.asMono()).block(Duration.ofSeconds(10));
        }
    }
}
