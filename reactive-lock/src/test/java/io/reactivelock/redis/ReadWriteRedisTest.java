package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockClosedException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/** What the Redis read-write lock keeps in Redis and how its waiters learn of a release. */
@WithRedis
class ReadWriteRedisTest {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(10);

    private final RedisServer redis;
    private ReactiveRedisLock client;
    private ReactiveRedisLock otherClient;

    ReadWriteRedisTest(RedisServer redis) {
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

    /** The read-write lock of a client of its own, closed after the test. */
    private ReactiveReadWriteLock lock(LockOptions options) {
        client = ReactiveRedisLock.create(redis.uri(), options);
        return client.readWriteLock();
    }

    /** The read-write lock of another client (another process, as far as Redis can tell), closed after the test. */
    private ReactiveReadWriteLock other(LockOptions options) {
        otherClient = ReactiveRedisLock.create(redis.uri(), options);
        return otherClient.readWriteLock();
    }

    @Test
    void aWriterIsAKeyHoldingItsTokenAndItsFencingTokenIsTheRecordsValue() {
        ReactiveReadWriteLock lock = lock(LockOptions.defaults());
        StepVerifier.create(lock.withWriteLock("catalog", TTL, lease -> Mono.fromCallable(() -> {
                    assertThat(redis.call("GET", "lock:{catalog}:rw:writer")).isEqualTo(lease.token());
                    assertThat(Long.parseLong(redis.call("PTTL", "lock:{catalog}:rw:writer"))).isBetween(25_000L, 30_000L);
                    assertThat(redis.call("GET", "lock:{catalog}:rw:writer:fence")).isEqualTo(Long.toString(lease.fencingToken()));
                    return "checked";
                }).subscribeOn(Schedulers.boundedElastic())))
                .expectNext("checked")
                .verifyComplete();
        assertThat(redis.call("EXISTS", "lock:{catalog}:rw:writer")).isEqualTo("0");
    }

    @Test
    void aReaderIsAMemberOfTheReadersScoredByTheEndOfItsLease() {
        ReactiveReadWriteLock lock = lock(LockOptions.defaults());
        String key = "lock:{catalog}:rw:readers";
        StepVerifier.create(lock.withReadLock("catalog", TTL, lease -> Mono.fromCallable(() -> {
                    List<Object> members = redis.callList("ZRANGE", key, "0", "-1", "WITHSCORES");
                    long serverMillis = Long.parseLong(String.valueOf(redis.callList("TIME").get(0))) * 1000;
                    assertThat(members).hasSize(2).first().isEqualTo(lease.token());
                    assertThat(Long.parseLong(String.valueOf(members.get(1))) - serverMillis)
                            .as("lease end, from the server's clock (whole seconds)").isBetween(25_000L, 31_000L);
                    assertThat(Long.parseLong(redis.call("PTTL", key))).isBetween(25_000L, 30_000L);
                    return "checked";
                }).subscribeOn(Schedulers.boundedElastic())))
                .expectNext("checked")
                .verifyComplete();
        assertThat(redis.call("EXISTS", key)).isEqualTo("0");
    }

    @Test
    void theLastReaderLeavingWakesAWriterOfAnotherInstanceThroughItsNoticeNotItsBackoff() {
        ReactiveReadWriteLock lock = lock(LockOptions.defaults());
        // A 10-minute backoff: the writer can only get the lock in time through the release notice.
        ReactiveReadWriteLock other = other(LockOptions.builder()
                .backoff(Duration.ofMinutes(10), Duration.ofMinutes(10)).acquireTimeout(Duration.ofMinutes(20)).build());
        Sinks.Empty<Void> reader = Sinks.empty();
        Disposable reading = lock.withReadLock("a", TTL, reader.asMono()).subscribe();
        await().pollInterval(Duration.ofMillis(10)).until(() -> "1".equals(redis.call("EXISTS", "lock:{a}:rw:readers")));
        StepVerifier.create(other.withWriteLock("a", TTL, Mono.just("woken")))
                .expectSubscription()
                .then(() -> await().pollInterval(Duration.ofMillis(10))
                        .until(() -> redis.call("PUBSUB", "CHANNELS", "lock:*").contains("lock:{a}:rw:released")))
                .then(reader::tryEmitEmpty)
                .expectNext("woken")
                .expectComplete()
                .verify(WAIT);
        reading.dispose();
    }

    @Test
    void aWritersReleaseWakesEveryReaderWaitingInTheProcessNotOnlyTheLongestWaiting() {
        // A 10-minute backoff: a reader gets in within the test only by being woken.
        ReactiveReadWriteLock lock = lock(LockOptions.builder()
                .backoff(Duration.ofMinutes(10), Duration.ofMinutes(10)).acquireTimeout(Duration.ofMinutes(20)).build());
        Sinks.Empty<Void> writer = Sinks.empty();
        Disposable writing = lock.withWriteLock("a", TTL, writer.asMono()).subscribe();
        await().pollInterval(Duration.ofMillis(10)).until(() -> "1".equals(redis.call("EXISTS", "lock:{a}:rw:writer")));
        // Each reader stays inside until all four are: woken one by one, they would never all be in.
        AtomicInteger inside = new AtomicInteger();
        Sinks.Empty<Void> allInside = Sinks.empty();
        Mono<String> body = Mono.defer(() -> {
            if (inside.incrementAndGet() == 4) {
                allInside.tryEmitEmpty();
            }
            return allInside.asMono().thenReturn("read");
        });
        List<Mono<String>> readers = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            Mono<String> reader = lock.withReadLock("a", TTL, body).cache();
            readers.add(reader);
            reader.subscribe();
            int waiting = i + 1;
            await().pollInterval(Duration.ofMillis(10)).until(() -> client.readWriteWaiters("a") == waiting);
        }
        writer.tryEmitEmpty();
        StepVerifier.create(Flux.merge(readers)).expectNextCount(4).expectComplete().verify(WAIT);
        writing.dispose();
    }

    @Test
    void aWaitingWriterKeepsItsPlaceForItsOwnWaiterLeaseWhenAWriterWithAShorterOneLeaves() {
        ReactiveReadWriteLock lock = lock(LockOptions.defaults()); // waiter lease 1 s (5 x 200 ms, at least 1 s)
        String waiting = "lock:{a}:rw:writers-waiting";
        Disposable reading = lock.withReadLock("a", TTL, Mono.never()).subscribe();
        await().pollInterval(Duration.ofMillis(10)).until(() -> "1".equals(redis.call("EXISTS", "lock:{a}:rw:readers")));
        // A writer of a client whose waiter lease is a minute registers as waiting (and stops calling).
        assertThat(redis.call("EVAL", PrimitiveScripts.WRITE_ACQUIRE.source(), "4", "lock:{a}:rw:writer",
                "lock:{a}:rw:writer:fence", "lock:{a}:rw:readers", waiting, "other-client-writer", "30000", "90000", "60000"))
                .isEqualTo("0");
        // A writer of this lock waits too, and gives up.
        Disposable writer = lock.withWriteLock("a", TTL, Mono.never()).subscribe();
        await().pollInterval(Duration.ofMillis(10)).until(() -> "2".equals(redis.call("ZCARD", waiting)));
        writer.dispose();
        await().pollInterval(Duration.ofMillis(10)).until(() -> "1".equals(redis.call("ZCARD", waiting)));

        assertThat(Long.parseLong(redis.call("PTTL", waiting)))
                .as("the waiting writers outlive the shorter lease of the writer that left: the other keeps new readers out")
                .isGreaterThan(50_000L);
        ReactiveReadWriteLock other = other(LockOptions.builder().acquireTimeout(Duration.ZERO).build());
        StepVerifier.create(other.withReadLock("a", TTL, Mono.just("in")))
                .expectError(LockAcquisitionException.class)
                .verify(WAIT);
        reading.dispose();
    }

    @Test
    void aWaitingWriterThatDiesStopsKeepingReadersOutAfterItsWaiterLease() {
        Duration waiterLease = Duration.ofSeconds(1);
        ReactiveReadWriteLock lock = lock(LockOptions.builder().acquireTimeout(WAIT).build());
        ReactiveReadWriteLock other = other(LockOptions.builder().acquireTimeout(Duration.ZERO).build());
        Disposable reading = lock.withReadLock("a", TTL, Mono.never()).subscribe();
        await().pollInterval(Duration.ofMillis(10)).until(() -> "1".equals(redis.call("EXISTS", "lock:{a}:rw:readers")));
        // A writer of another client registers as waiting with a 1 s waiter lease, and dies: it never calls again.
        long registered = System.nanoTime();
        assertThat(redis.call("EVAL", PrimitiveScripts.WRITE_ACQUIRE.source(), "4", "lock:{a}:rw:writer",
                "lock:{a}:rw:writer:fence", "lock:{a}:rw:readers", "lock:{a}:rw:writers-waiting", "dead-writer", "30000",
                "90000", Long.toString(waiterLease.toMillis())))
                .isEqualTo("0");

        StepVerifier.create(other.withReadLock("a", TTL, Mono.just("in")))
                .as("a new reader while the dead writer's waiter lease lasts").expectError(LockAcquisitionException.class)
                .verify(WAIT);
        StepVerifier.create(lock.withReadLock("a", TTL, Mono.just("in"))).expectNext("in").verifyComplete();
        // At most one waiter lease after it registered, plus a backoff step (200 ms) of the reader's
        // retries, with a second of slack for a loaded machine.
        assertThat(Duration.ofNanos(System.nanoTime() - registered)).as("when a new reader got in")
                .isLessThan(waiterLease.plusMillis(200).plusSeconds(1));
        reading.dispose();
    }

    @Test
    void theReadWriteLockOfAClosedClientRefusesNewAcquisitions() {
        ReactiveReadWriteLock lock = lock(LockOptions.defaults());
        client.close();
        StepVerifier.create(lock.withReadLock("a", TTL, Mono.just(1))).expectError(LockClosedException.class).verify(WAIT);
        StepVerifier.create(lock.withWriteLock("a", TTL, Mono.just(1))).expectError(LockClosedException.class).verify(WAIT);
    }
}
