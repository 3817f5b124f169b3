package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockOptions;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * Issue 13: background releases are coalesced per lock name. During an outage, every cancelled
 * acquisition that sent an attempt must be released later; however many there are, one lock
 * instance keeps one release loop per name (one round of commands and one timer at a time), and
 * the loops drain once Redis is back.
 */
@WithRedis
class BackgroundReleaseTest {

    private static final int NAMES = 4;

    @Test
    void anOutageWithCancelChurnKeepsOneReleaseLoopPerNameAndDrainsWhenRedisIsBack(RedisServer redis) {
        ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(),
                LockOptions.builder().backoff(Duration.ofMillis(1), Duration.ofMillis(50)).build());
        try {
            redis.stop();
            AtomicInteger abandoned = new AtomicInteger();
            Flux.range(0, 2_000)
                    .flatMap(i -> lock.withLock("churn:" + i % NAMES, Duration.ofMinutes(1), Mono.just(i))
                            .doOnCancel(abandoned::incrementAndGet)
                            .take(Duration.ofMillis(5))
                            .onErrorResume(LockAcquisitionException.class, e -> Mono.empty()), 64)
                    .then()
                    .block(Duration.ofMinutes(1));
            assertThat(abandoned).as("acquisitions cancelled during the outage").hasPositiveValue();
            assertThat(lock.namesReleasingInBackground()).as("release loops").isBetween(1, NAMES);
            assertThat(lock.releaseRetryTimers()).as("retry timers armed, one per name at most").isBetween(1, NAMES);

            redis.restart();
            await().atMost(Duration.ofSeconds(30)).until(() -> lock.namesReleasingInBackground() == 0);
            assertThat(redis.call("DBSIZE")).as("nothing left in the restarted Redis").isEqualTo("0");
            StepVerifier.create(lock.withLock("churn:0", Duration.ofMinutes(1), Mono.just("after")))
                    .expectNext("after").verifyComplete();
        } finally {
            lock.close();
        }
    }
}
