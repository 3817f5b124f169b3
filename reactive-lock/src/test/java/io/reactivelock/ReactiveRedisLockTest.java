package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.internal.LockScripts;
import io.reactivelock.support.CommandStats;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.publisher.PublisherProbe;

/**
 * What only the Redis lock shows: its keys, scripts, connections and Redis errors. The behaviour
 * every implementation shares is in {@link ReactiveLockContract}.
 */
@WithRedis
class ReactiveRedisLockTest {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(10);

    private RedisServer redis;
    private ReactiveRedisLock lock;

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
        redis.call("CONFIG", "RESETSTAT");
        this.lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder().acquireTimeout(Duration.ofSeconds(5)).build());
    }

    @AfterEach
    void tearDown() {
        lock.close();
    }

    private boolean held(String name) {
        return "1".equals(redis.call("EXISTS", "lock:{" + name + "}"));
    }

    @Test
    void nothingHappensUntilSubscription() {
        PublisherProbe<String> body = PublisherProbe.of(Mono.just("x"));
        Mono<String> locked = lock.withLock("lazy", TTL, body.mono());
        assertThat(redis.call("DBSIZE")).as("no key written before subscription").isEqualTo("0");
        body.assertWasNotSubscribed();
        StepVerifier.create(locked).expectNext("x").verifyComplete();
        body.assertWasSubscribed();
    }

    @Test
    void fencingTokensKeepIncreasingWhenTheFenceRecordIsGone() {
        long first = lock.withLock("a", TTL, lease -> Mono.just(lease.fencingToken())).block(WAIT);
        redis.call("DEL", "lock:{a}:fence");
        long second = lock.withLock("a", TTL, lease -> Mono.just(lease.fencingToken())).block(WAIT);
        assertThat(second).isGreaterThan(first);
    }

    @Test
    void aWaiterGetsTheLockOnceTheHolderReleasesIt() {
        redis.call("SET", "lock:{a}", "someone-else", "PX", "60000");
        StepVerifier.create(lock.withLock("a", TTL, Mono.just("mine")))
                .expectSubscription()
                .then(() -> await().until(() -> CommandStats.calls(redis, "evalsha") >= 2))
                .then(() -> redis.call("DEL", "lock:{a}"))
                .expectNext("mine")
                .verifyComplete();
    }

    @Test
    void aLockThatStaysBusyFailsWithLockAcquisitionExceptionAndTheBodyNeverRuns() {
        redis.call("SET", "lock:{a}", "someone-else", "PX", "60000");
        ReactiveRedisLock impatient = ReactiveRedisLock.create(redis.uri(),
                LockOptions.builder().acquireTimeout(Duration.ofMillis(300)).build());
        PublisherProbe<String> body = PublisherProbe.of(Mono.just("x"));
        try {
            StepVerifier.create(impatient.withLock("a", TTL, body.mono()))
                    .expectErrorSatisfies(e -> {
                        assertThat(e).isInstanceOf(LockAcquisitionException.class).hasNoCause()
                                .hasMessageContaining("'a'");
                        LockAcquisitionException failure = (LockAcquisitionException) e;
                        assertThat(failure.lockName()).isEqualTo("a");
                        assertThat(failure.attempts()).isGreaterThan(1);
                        assertThat(failure.waited()).isGreaterThanOrEqualTo(Duration.ofMillis(300));
                    })
                    .verify(WAIT);
            body.assertWasNotSubscribed();
            assertThat(redis.call("GET", "lock:{a}")).isEqualTo("someone-else");
        } finally {
            impatient.close();
        }
    }

    @Test
    void cancellingWhileWaitingLeavesTheOtherHoldersLockAlone() {
        redis.call("SET", "lock:{a}", "someone-else", "PX", "60000");
        Disposable waiting = lock.withLock("a", TTL, Mono.just("x")).subscribe();
        await().until(() -> CommandStats.calls(redis, "evalsha") >= 2);
        long callsAtCancel = CommandStats.calls(redis, "evalsha");
        waiting.dispose();
        // The abandoned acquisition's release is a compare-and-delete: it must not touch the holder.
        await().until(() -> CommandStats.calls(redis, "evalsha") > callsAtCancel);
        assertThat(redis.call("GET", "lock:{a}")).isEqualTo("someone-else");
    }

    @Test
    void lockTakenByAnotherTokenCancelsTheBodyWithLockLostExceptionAndIsNotReleased() {
        PublisherProbe<Object> body = PublisherProbe.of(Mono.never());
        StepVerifier.create(lock.withLock("a", Duration.ofMillis(300), body.mono()))
                .expectSubscription()
                .then(() -> await().until(() -> held("a")))
                .then(() -> redis.call("SET", "lock:{a}", "intruder", "PX", "60000"))
                .expectError(LockLostException.class)
                .verify(WAIT);
        body.assertWasCancelled();
        assertThat(redis.call("GET", "lock:{a}")).as("the other holder's lock is untouched").isEqualTo("intruder");
    }

    @Test
    void scriptsAreReloadedAfterScriptFlush() {
        StepVerifier.create(lock.withLock("a", TTL, Mono.just(1))).expectNext(1).verifyComplete();
        redis.call("SCRIPT", "FLUSH");
        StepVerifier.create(lock.withLock("a", TTL, Mono.just(2))).expectNext(2).verifyComplete();
        assertThat(held("a")).isFalse();
        assertThat(redis.call("SCRIPT", "EXISTS", LockScripts.ACQUIRE.sha())).contains("1");
    }

    @Test
    void aPermanentRedisErrorFailsAtOnceWithTheRedisErrorAsCause() {
        redis.call("HSET", "lock:{a}", "not", "a string");
        StepVerifier.create(lock.withLock("a", TTL, Mono.just("x")))
                .expectErrorSatisfies(e -> {
                    assertThat(e).isInstanceOf(LockAcquisitionException.class)
                            .hasCauseInstanceOf(RedisCommandExecutionException.class);
                    assertThat(((LockAcquisitionException) e).attempts()).isEqualTo(1);
                })
                .verify(WAIT);
    }

    @Test
    void unreachableRedisFailsWithinTheAcquireTimeoutWithTheRedisErrorAsCause() {
        ReactiveRedisLock impatient = ReactiveRedisLock.create(redis.uri(),
                LockOptions.builder().acquireTimeout(Duration.ofMillis(500)).build());
        try {
            redis.kill();
            StepVerifier.create(impatient.withLock("a", TTL, Mono.just("x")))
                    .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockAcquisitionException.class)
                            .hasCauseInstanceOf(RedisException.class))
                    .verify(WAIT);
        } finally {
            impatient.close();
        }
    }

    @Test
    void aFailedReleaseNeverReplacesTheBodyValue() {
        ReactiveRedisLock quick = ReactiveRedisLock.create(redis.uri(),
                LockOptions.builder().commandTimeout(Duration.ofMillis(100)).build());
        try {
            Mono<String> bodyThatPausesRedis = Mono.fromRunnable(redis::pause)
                    .subscribeOn(Schedulers.boundedElastic())
                    .thenReturn("value");
            StepVerifier.create(quick.withLock("a", TTL, bodyThatPausesRedis))
                    .expectNext("value")
                    .verifyComplete();
        } finally {
            redis.resume();
            quick.close();
        }
    }

    @Test
    void aFailedReleaseIsAddedAsSuppressedToTheBodyError() {
        ReactiveRedisLock quick = ReactiveRedisLock.create(redis.uri(),
                LockOptions.builder().commandTimeout(Duration.ofMillis(100)).build());
        try {
            IllegalStateException boom = new IllegalStateException("boom");
            Mono<String> bodyThatPausesRedisThenFails = Mono.fromRunnable(redis::pause)
                    .subscribeOn(Schedulers.boundedElastic())
                    .then(Mono.error(boom));
            StepVerifier.create(quick.withLock("a", TTL, bodyThatPausesRedisThenFails))
                    .expectErrorSatisfies(e -> assertThat(e).isSameAs(boom)
                            .satisfies(x -> assertThat(x.getSuppressed()).hasSize(1)))
                    .verify(WAIT);
        } finally {
            redis.resume();
            quick.close();
        }
    }

    @Test
    void afterCloseNewLocksFailAndAnOwnedConnectionIsClosed() {
        ReactiveRedisLock closing = ReactiveRedisLock.create(redis.uri());
        StepVerifier.create(closing.closeAsync()).verifyComplete();
        assertThatThrownBy(() -> closing.withLock("a", TTL, Mono.just("x")).block(WAIT))
                .isInstanceOf(LockClosedException.class)
                .satisfies(e -> assertThat(((LockClosedException) e).reason()).isEqualTo(LockAcquisitionException.Reason.CLOSED));
        StepVerifier.create(closing.closeAsync()).as("closing twice is harmless").verifyComplete();
    }

    @Test
    void aLockMadeFromTheCallersConnectionNeverClosesIt() {
        RedisClient client = RedisClient.create(redis.uri());
        try (StatefulRedisConnection<String, String> connection = client.connect(StringCodec.UTF8)) {
            ReactiveRedisLock borrowed = ReactiveRedisLock.create(connection, LockOptions.defaults());
            StepVerifier.create(borrowed.withLock("a", TTL, Mono.just(1))).expectNext(1).verifyComplete();
            borrowed.close();
            assertThat(connection.isOpen()).isTrue();
            assertThat(connection.sync().ping()).isEqualTo("PONG");
        } finally {
            client.shutdown();
        }
    }

    @Test
    void manyNamesLockIndependently() {
        List<Mono<String>> all = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            String name = "entity:" + i;
            all.add(lock.withLock(name, TTL, Mono.fromCallable(() -> held(name) ? name : "not held")
                    .subscribeOn(Schedulers.boundedElastic())));
        }
        StepVerifier.create(Mono.zip(all, values -> values.length))
                .expectNext(50)
                .verifyComplete();
        assertThat(redis.call("EVAL", "return #redis.call('KEYS', 'lock:{*}')", "0")).isEqualTo("0");
    }
}
