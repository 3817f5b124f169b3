package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.publisher.PublisherProbe;

/**
 * {@code withLockMany} on Redis: a body of many values holds the lock while it runs, passes its
 * values on as they come, and gives the lock back when it completes, fails or is cancelled; a
 * lost lease ends it with {@link LockLostException}. The TTL is 30 times the longest wait, so a
 * key gone within the wait was released, not expired.
 */
@WithRedis
class WithLockManyTest {

    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final Duration TTL = WAIT.multipliedBy(30);
    private static final String KEY = "lock:{export}";

    private RedisServer redis;
    private final List<ReactiveRedisLock> clients = new ArrayList<>();

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
    }

    @AfterEach
    void tearDown() {
        clients.forEach(ReactiveRedisLock::close);
    }

    private ReactiveRedisLock client(LockOptions options) {
        ReactiveRedisLock client = ReactiveRedisLock.create(redis.uri(), options);
        clients.add(client);
        return client;
    }

    /** Who holds the lock, read from Redis off the reactive threads; null when free. */
    private Mono<String> holder() {
        return Mono.fromCallable(() -> String.valueOf(redis.call("GET", KEY))).subscribeOn(Schedulers.boundedElastic());
    }

    private boolean held() {
        return "1".equals(redis.call("EXISTS", KEY));
    }

    @Test
    void everyValuePassesThroughWhileTheLockIsHeldAndItIsReleasedBeforeTheCompletionArrives() {
        ReactiveRedisLock client = client(LockOptions.defaults());
        Function<LockLease, Publisher<String>> body = lease -> Flux.range(1, 5)
                .concatMap(i -> holder().map(holder -> holder.equals(lease.token()) ? "row " + i + " held" : "row " + i + " NOT held"));
        StepVerifier.create(client.withLockMany("export", TTL, body))
                .expectNext("row 1 held", "row 2 held", "row 3 held", "row 4 held", "row 5 held")
                .verifyComplete();
        assertThat(held()).as("the lock, once the completion arrived").isFalse();
    }

    @Test
    void aFailingBodyReleasesTheLockBeforeItsErrorArrivesAfterTheValuesItEmitted() {
        ReactiveRedisLock client = client(LockOptions.defaults());
        IllegalStateException boom = new IllegalStateException("boom");
        StepVerifier.create(client.withLockMany("export", TTL, lease -> Flux.just("first", "second").concatWith(Flux.error(boom))))
                .expectNext("first", "second")
                .expectErrorSatisfies(e -> assertThat(e).isSameAs(boom))
                .verify(WAIT);
        assertThat(held()).as("the lock, once the error arrived").isFalse();
    }

    @Test
    void cancellingTheFluxCancelsTheBodyAndReleasesTheLock() {
        ReactiveRedisLock client = client(LockOptions.defaults());
        // The probe is the whole body, subscribed before its first value: a cancel that arrives while
        // "first" is being delivered (before a later part of the body was subscribed) still reaches it.
        PublisherProbe<String> body = PublisherProbe.of(Flux.just("first").concatWith(Flux.never()));
        StepVerifier.create(client.withLockMany("export", TTL, lease -> body.flux()))
                .expectNext("first")
                .then(() -> assertThat(held()).as("held while the body runs").isTrue())
                .thenCancel()
                .verify(WAIT);
        body.assertWasCancelled();
        await("the release of the cancelled Flux").atMost(WAIT).pollInterval(Duration.ofMillis(10)).until(() -> !held());
        assertThat(client.activeLeases()).as("renewals running").isZero();
    }

    @Test
    void aLostLeaseFailsTheFluxWithLockLostExceptionAndCancelsTheBody() {
        ReactiveRedisLock client = client(LockOptions.builder().renewalInterval(Duration.ofMillis(100)).build());
        PublisherProbe<String> rest = PublisherProbe.of(Flux.never());
        StepVerifier.create(client.withLockMany("export", TTL, lease -> Flux.just("first").concatWith(rest.flux())))
                .expectNext("first")
                .then(() -> redis.call("SET", KEY, "intruder", "PX", Long.toString(TTL.toMillis())))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockLostException.class)
                        .hasMessageContaining("another holder took it"))
                .verify(WAIT);
        rest.assertWasCancelled();
        assertThat(redis.call("GET", KEY)).as("the other holder's lock is untouched").isEqualTo("intruder");
    }

    @Test
    void aSecondAcquirerWaitsWhileTheFluxRunsAndGetsTheLockWhenItCompletes() {
        ReactiveRedisLock client = client(LockOptions.builder().acquireTimeout(WAIT).build());
        Sinks.Many<String> rows = Sinks.many().unicast().onBackpressureBuffer();
        List<String> seen = new CopyOnWriteArrayList<>();
        PublisherProbe<String> second = PublisherProbe.of(Mono.just("second"));

        StepVerifier.create(client.withLockMany("export", TTL, lease -> rows.asFlux()))
                .then(() -> rows.tryEmitNext("row 1"))
                .assertNext(seen::add)
                .then(() -> {
                    client.withLock("export", TTL, second.mono()).subscribe(seen::add);
                    await("the second acquirer to wait").atMost(WAIT).until(() -> client.localWaiters("export") == 1);
                    rows.tryEmitNext("row 2");
                })
                .assertNext(seen::add)
                .then(() -> {
                    second.assertWasNotSubscribed();
                    rows.tryEmitComplete();
                })
                .verifyComplete();
        await("the second acquirer's body").atMost(WAIT).until(() -> seen.contains("second"));
        assertThat(seen).containsExactly("row 1", "row 2", "second");
    }
}
