package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockClosedException;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.support.CommandStats;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.publisher.PublisherProbe;

/**
 * What only the Redis lock shows: its keys, scripts, connections and Redis errors. The behaviour
 * every implementation shares is in {@code io.reactivelock.testing.ReactiveLockContract} (module reactive-lock-test).
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
    void fencingTokensKeepIncreasingAfterTheFencingRecordIsGoneWhileTheServerClockMovesOn() {
        long first = lock.withLock("a", TTL, lease -> Mono.just(lease.fencingToken())).block(WAIT);
        redis.call("DEL", "lock:{a}:fence"); // as when it expires, TTL + 60 s after the last acquisition
        long second = lock.withLock("a", TTL, lease -> Mono.just(lease.fencingToken())).block(WAIT);
        assertThat(second).as("the server clock, which moved on").isGreaterThan(first);
    }

    @Test
    void whileTheFencingRecordLivesTokensRiseOneByOneAboveItWhenTheServerClockIsBehind() {
        // As if the clock had stepped back an hour since the last token was issued.
        long serverMicros = Long.parseLong(redis.call("EVAL", "local t = redis.call('TIME') return t[1] * 1000000 + t[2]", "0"));
        long last = serverMicros + TimeUnit.HOURS.toMicros(1);
        redis.call("SET", "lock:{a}:fence", Long.toString(last));
        List<Long> tokens = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            tokens.add(lock.withLock("a", TTL, lease -> Mono.just(lease.fencingToken())).block(WAIT));
        }
        assertThat(tokens).containsExactly(last + 1, last + 2, last + 3);
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
            assertThat(redis.call("GET", "lock:{a}")).as("still the holder's, with the sleepers mark the waiter set")
                    .isEqualTo("someone-else+");
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
        assertThat(redis.call("GET", "lock:{a}")).as("still the holder's, with the sleepers mark the waiter set")
                .isEqualTo("someone-else+");
    }

    @Test
    void lockTakenByAnotherTokenCancelsTheBodyWithLockLostExceptionAndIsNotReleased() {
        ReactiveRedisLock renewingOften = ReactiveRedisLock.create(redis.uri(),
                LockOptions.builder().renewalInterval(Duration.ofMillis(100)).build());
        PublisherProbe<Object> body = PublisherProbe.of(Mono.never());
        try {
            StepVerifier.create(renewingOften.withLock("a", TTL, body.mono()))
                    .expectSubscription()
                    .then(() -> await().until(() -> held("a")))
                    .then(() -> redis.call("SET", "lock:{a}", "intruder", "PX", "60000"))
                    .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockLostException.class)
                            .hasMessageContaining("another holder took it"))
                    .verify(WAIT);
            body.assertWasCancelled();
            assertThat(redis.call("GET", "lock:{a}")).as("the other holder's lock is untouched").isEqualTo("intruder");
        } finally {
            renewingOften.close();
        }
    }

    @Test
    void anUncontendedPairOfABodyThatSeesTheLeaseMakesSixRedisCallsInItsTwoScripts() {
        StepVerifier.create(lock.withLock("a", TTL, lease -> Mono.just(1))).expectNext(1).verifyComplete(); // scripts loaded
        redis.call("CONFIG", "RESETSTAT");
        StepVerifier.create(lock.withLock("a", TTL, lease -> Mono.just(lease.fencingToken()))).expectNextCount(1).verifyComplete();

        // Acquire: SET NX, then TIME and SET ... GET for the fencing token. Release: GET of the lock (no sleepers
        // mark: no waiter to wake), DEL.
        assertThat(callsSinceReset()).isEqualTo(Map.of("evalsha", 2L, "set", 2L, "time", 1L, "get", 1L, "del", 1L));
    }

    @Test
    void anUncontendedPairOfABodyThatDoesNotSeeTheLeaseIsAPlainSetAndTheReleaseScript() {
        StepVerifier.create(lock.withLock("a", TTL, Mono.just(1))).expectNext(1).verifyComplete(); // scripts loaded
        redis.call("CONFIG", "RESETSTAT");
        StepVerifier.create(lock.withLock("a", TTL, Mono.just(2))).expectNext(2).verifyComplete();

        // Acquire: SET NX PX, no script (nothing can read a fencing token). Release: as above.
        assertThat(callsSinceReset()).isEqualTo(Map.of("set", 1L, "evalsha", 1L, "get", 1L, "del", 1L));
        assertThat(redis.call("EXISTS", "lock:{a}", "lock:{a}:fence")).as("no fencing record: no token was issued")
                .isEqualTo("0");
    }

    @Test
    void aHolderWhoseBodyDoesNotSeeTheLeaseTakesNoFencingTokenAndTheNextOneGoesOnFromTheLast() {
        // The record an hour ahead of the server clock: a token taken from the clock would show.
        long serverMicros = Long.parseLong(redis.call("EVAL", "local t = redis.call('TIME') return t[1] * 1000000 + t[2]", "0"));
        redis.call("SET", "lock:{a}:fence", Long.toString(serverMicros + TimeUnit.HOURS.toMicros(1)), "PX", "60000");
        long first = lock.withLock("a", TTL, lease -> Mono.just(lease.fencingToken())).block(WAIT);
        String record = redis.call("GET", "lock:{a}:fence");

        assertThat(lock.withLock("a", TTL, Mono.just("between")).block(WAIT)).isEqualTo("between");
        assertThat(redis.call("GET", "lock:{a}:fence")).as("no token issued in between").isEqualTo(record);

        long second = lock.withLock("a", TTL, lease -> Mono.just(lease.fencingToken())).block(WAIT);
        assertThat(second).isEqualTo(first + 1);
    }

    private Map<String, Long> callsSinceReset() {
        Map<String, Long> calls = CommandStats.all(redis);
        // CONFIG RESETSTAT itself: counted as "config" by Redis 6.2 and 7.0, "config|resetstat" by 7.4 and Valkey.
        calls.keySet().removeIf(command -> command.equals("config") || command.startsWith("config|"));
        return calls;
    }

    @Test
    void scriptsAreReloadedAfterScriptFlush() {
        StepVerifier.create(lock.withLock("a", TTL, lease -> Mono.just(1))).expectNext(1).verifyComplete();
        redis.call("SCRIPT", "FLUSH");
        StepVerifier.create(lock.withLock("a", TTL, lease -> Mono.just(2))).expectNext(2).verifyComplete();
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
                            .satisfies(x -> assertThat(x.getSuppressed()).singleElement().satisfies(timeout -> {
                                assertThat(timeout).isInstanceOf(TimeoutException.class)
                                        .hasToString("java.util.concurrent.TimeoutException: no reply within 100 ms");
                                // Made on a timer's thread: a trace would say nothing and cost each waiter its bytes.
                                assertThat(timeout.getStackTrace()).isEmpty();
                            })))
                    .verify(WAIT);
        } finally {
            redis.resume();
            quick.close();
        }
    }

    @Test
    void afterCloseNewLocksFailAndTheOwnedConnectionsAreClosed() {
        long clientsBefore = clients();
        ReactiveRedisLock closing = ReactiveRedisLock.create(redis.uri());
        assertThat(clients() - clientsBefore).as("connections of a lock made from a URI: commands and pub/sub").isEqualTo(2);
        StepVerifier.create(closing.closeAsync()).verifyComplete();
        await().untilAsserted(() -> assertThat(clients()).as("connections after closeAsync()").isEqualTo(clientsBefore));
        assertThatThrownBy(() -> closing.withLock("a", TTL, Mono.just("x")).block(WAIT))
                .isInstanceOf(LockClosedException.class)
                .satisfies(e -> assertThat(((LockClosedException) e).reason()).isEqualTo(LockAcquisitionException.Reason.CLOSED));
        StepVerifier.create(closing.closeAsync()).as("closing twice is harmless").verifyComplete();
    }

    /** How many clients Redis has connected, this query's own connection included. */
    private long clients() {
        return redis.call("CLIENT", "LIST").lines().count();
    }

    @Test
    void aClientMadeFromTheCallersLettuceClientClosesOnlyTheTwoConnectionsItOpened() {
        RedisClient client = RedisClient.create(redis.uri());
        try (StatefulRedisConnection<String, String> connection = client.connect(StringCodec.UTF8)) {
            long clientsBefore = clients();
            ReactiveRedisLock borrowed = ReactiveRedisLock.create(client, LockOptions.defaults());
            assertThat(clients() - clientsBefore).as("connections it opened: commands and pub/sub").isEqualTo(2);
            StepVerifier.create(borrowed.withLock("a", TTL, Mono.just(1))).expectNext(1).verifyComplete();
            borrowed.close();
            await().untilAsserted(() -> assertThat(clients()).as("connections after close()").isEqualTo(clientsBefore));
            assertThat(connection.isOpen()).as("the caller's own connection").isTrue();
            assertThat(connection.sync().ping()).isEqualTo("PONG");
            try (StatefulRedisConnection<String, String> another = client.connect(StringCodec.UTF8)) {
                assertThat(another.sync().ping()).as("the caller's Lettuce client, not shut down").isEqualTo("PONG");
            }
        } finally {
            client.shutdown();
        }
    }

    @Test
    void manyNamesLockIndependentlyAndAreHeldAtOnce() {
        List<String> names = IntStream.range(0, 50).mapToObj(i -> "entity:" + i).toList();
        AtomicInteger inside = new AtomicInteger();
        Sinks.Empty<Void> allInside = Sinks.empty();
        // Each body leaves only once every body is inside: one name blocking another would never get there.
        Flux<String> bodies = Flux.fromIterable(names).flatMap(name -> lock.withLock(name, TTL,
                Mono.fromCallable(() -> held(name) ? name : "not held: " + name)
                        .subscribeOn(Schedulers.boundedElastic())
                        .doOnNext(seen -> {
                            if (inside.incrementAndGet() == names.size()) {
                                allInside.tryEmitEmpty();
                            }
                        })
                        .delayUntil(seen -> allInside.asMono())), names.size());
        StepVerifier.create(bodies.collectList())
                .assertNext(seen -> assertThat(seen).containsExactlyInAnyOrderElementsOf(names))
                .verifyComplete();
        assertThat(redis.call("EVAL", "return #redis.call('KEYS', 'lock:{*}')", "0")).isEqualTo("0");
    }
}
