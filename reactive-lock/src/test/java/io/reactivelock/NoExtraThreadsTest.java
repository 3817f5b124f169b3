package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The library starts no threads: timers use Reactor's schedulers, replies Lettuce's event loops
 * (and, when closing, Reactor's bounded elastic scheduler and Netty's global executor).
 */
@WithRedis
class NoExtraThreadsTest {

    @Test
    void lockingWithContentionRenewalAndCancelStartsOnlyReactorAndLettuceThreads(RedisServer redis) {
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri());
        try {
            Flux.range(0, 200)
                    .flatMap(i -> lock.withLock("t" + (i % 4), Duration.ofMillis(150), Mono.delay(Duration.ofMillis(i % 3))))
                    .then()
                    .block(Duration.ofSeconds(30));
            lock.withLock("renewed", Duration.ofSeconds(1), Mono.delay(Duration.ofMillis(1200))).block(Duration.ofSeconds(5));
            lock.withLock("cancelled", Duration.ofSeconds(5), Mono.never()).take(Duration.ofMillis(50)).block(Duration.ofSeconds(5));
        } finally {
            lock.close();
        }
        Set<String> started = Thread.getAllStackTraces().keySet().stream()
                .filter(t -> !before.contains(t))
                .map(Thread::getName)
                .collect(Collectors.toSet());
        assertThat(started).allSatisfy(name -> assertThat(name).matches("(parallel|boundedElastic|lettuce|globalEventExecutor)-.*"));
    }
}
