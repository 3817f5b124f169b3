package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import io.reactivelock.redis.ReactiveRedisLock;

/**
 * The library starts no threads: timers use Reactor's schedulers, replies Lettuce's event loops
 * (and, when closing, Reactor's bounded elastic scheduler and Netty's global executor).
 */
@WithRedis
class NoExtraThreadsTest {

    private static final Duration TTL = Duration.ofSeconds(10);
    private static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void lockingWithContentionRenewalAndCancelStartsOnlyReactorAndLettuceThreads(RedisServer redis) {
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        Set<Thread> seen = new HashSet<>();
        Sinks.Empty<Void> renewedTwice = Sinks.empty();
        // The acquire timeout is no claim here: 50 acquisitions of a name queue for hand-offs one
        // after another, about a second in all, but a clean-clone run beside two busy loops and
        // other builds once took more than the default 10 s (issue 36).
        ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                .acquireTimeout(WAIT)
                .renewalInterval(Duration.ofMillis(20))
                .listener(new LockListener() {
                    private int renewals;

                    @Override
                    public synchronized void renewed(String name) {
                        if (++renewals == 2) {
                            renewedTwice.tryEmitEmpty();
                        }
                    }
                })
                .build());
        try {
            // Contention: 200 bodies on 4 names, each hopping to a Reactor thread.
            Flux.range(0, 200)
                    .flatMap(i -> lock.withLock("t" + (i % 4), TTL, Mono.just(i).publishOn(Schedulers.parallel())))
                    .then()
                    .block(WAIT);
            // Renewal: a body that ends once its lease was renewed twice.
            lock.withLock("renewed", TTL, renewedTwice.asMono()).block(WAIT);
            // Cancel: a held lock given up by its subscriber.
            Disposable cancelled = lock.withLock("cancelled", TTL, Mono.never()).subscribe();
            // Polled on this thread: Awaitility's own thread would count as one started here.
            await().pollInSameThread().until(() -> "1".equals(redis.call("EXISTS", "lock:{cancelled}")));
            cancelled.dispose();
            await().pollInSameThread().until(() -> "0".equals(redis.call("EXISTS", "lock:{cancelled}")));
            seen.addAll(Thread.getAllStackTraces().keySet());
        } finally {
            lock.close();
        }
        seen.addAll(Thread.getAllStackTraces().keySet());

        Set<String> started = seen.stream()
                .filter(t -> !before.contains(t))
                .map(Thread::getName)
                .collect(Collectors.toSet());
        assertThat(started).as("threads started meanwhile include the lock's own Lettuce client's event loops")
                .anyMatch(name -> name.startsWith("lettuce-"));
        assertThat(started).allSatisfy(name -> assertThat(name).matches("(parallel|boundedElastic|lettuce|globalEventExecutor)-.*"));
    }
}
