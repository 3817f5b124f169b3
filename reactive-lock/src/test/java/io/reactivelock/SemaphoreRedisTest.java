package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import io.reactivelock.redis.ReactiveRedisLock;

/** What the Redis semaphore keeps in Redis and how its waiters learn of a release. */
@WithRedis
class SemaphoreRedisTest {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(10);

    private final RedisServer redis;
    private ReactiveRedisLock client;
    private ReactiveRedisLock otherClient;

    SemaphoreRedisTest(RedisServer redis) {
        this.redis = redis;
    }

    @AfterEach
    void close() {
        for (ReactiveRedisLock c : new ReactiveRedisLock[] {client, otherClient}) {
            if (c != null) {
                c.close();
            }
        }
    }

    @Test
    void aHoldersPermitsAreOneMemberOfTheNamesSortedSetScoredByTheEndOfItsLease() {
        client = ReactiveRedisLock.create(redis.uri());
        String key = "lock:{order:42}:permits";
        StepVerifier.create(client.semaphore(5).withPermits("order:42", 2, TTL, lease -> Mono.fromCallable(() -> {
                    List<Object> members = redis.callList("ZRANGE", key, "0", "-1", "WITHSCORES");
                    long serverMillis = Long.parseLong(String.valueOf(redis.callList("TIME").get(0))) * 1000;
                    long pttl = Long.parseLong(redis.call("PTTL", key));
                    assertThat(members).hasSize(2).first().isEqualTo("2:" + lease.token());
                    assertThat(Long.parseLong(String.valueOf(members.get(1))) - serverMillis)
                            .as("lease end, from the server's clock (whole seconds)").isBetween(25_000L, 31_000L);
                    assertThat(pttl).as("the key expires with the last lease").isBetween(25_000L, 30_000L);
                    return "checked";
                }).subscribeOn(Schedulers.boundedElastic())))
                .expectNext("checked")
                .verifyComplete();
        assertThat(redis.call("EXISTS", key)).isEqualTo("0");
    }

    @Test
    void aReleaseWakesAWaiterOfAnotherInstanceThroughItsNoticeNotItsBackoff() {
        client = ReactiveRedisLock.create(redis.uri());
        // A 10-minute backoff: the waiter can only get the permit in time through the release notice.
        otherClient = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                .backoff(Duration.ofMinutes(10), Duration.ofMinutes(10)).acquireTimeout(Duration.ofMinutes(20)).build());
        Sinks.Empty<Void> holder = Sinks.empty();
        Disposable holding = client.semaphore(1).withPermits("a", 1, TTL, holder.asMono()).subscribe();
        await().pollInterval(Duration.ofMillis(10)).until(() -> "1".equals(redis.call("EXISTS", "lock:{a}:permits")));
        StepVerifier.create(otherClient.semaphore(1).withPermits("a", 1, TTL, Mono.just("woken")))
                .expectSubscription()
                .then(() -> await().pollInterval(Duration.ofMillis(10))
                        .until(() -> redis.call("PUBSUB", "CHANNELS", "lock:*").contains("lock:{a}:permits:released")))
                .then(holder::tryEmitEmpty)
                .expectNext("woken")
                .expectComplete()
                .verify(WAIT);
        holding.dispose();
    }

    @Test
    void aSemaphoreOfAClosedClientRefusesNewAcquisitions() {
        client = ReactiveRedisLock.create(redis.uri());
        ReactiveSemaphore semaphore = client.semaphore(1);
        client.close();
        StepVerifier.create(semaphore.withPermits("a", 1, TTL, Mono.just(1)))
                .expectError(LockClosedException.class)
                .verify(WAIT);
    }
}
