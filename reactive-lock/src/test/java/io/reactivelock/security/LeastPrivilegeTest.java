package io.reactivelock.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.lettuce.core.RedisCommandExecutionException;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLease;
import io.reactivelock.LockOptions;
import io.reactivelock.MultiLockLease;
import io.reactivelock.ReactiveLock;
import io.reactivelock.ReactiveMultiLock;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.ReactiveSemaphore;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/**
 * The lock works for a Redis user that has exactly the ACL line of docs/security.md for the server
 * ({@link LockUser#rules}) and nothing more: no command of the lock or of Lettuce's connection
 * set-up is refused ({@code ACL LOG} stays empty), for the lock and every primitive. A user
 * without the key pattern is refused at once with {@code NOPERM}, not retried.
 */
@WithRedis
class LeastPrivilegeTest {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(20);
    /** Renewals every 100 ms of a 3 s lease: two of them come within a fifth of a second. */
    private static final Duration RENEWAL = Duration.ofMillis(100);

    private RedisServer redis;
    private final List<ReactiveRedisLock> locks = new ArrayList<>();

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
        LockUser.create(redis);
        redis.call("ACL", "LOG", "RESET");
    }

    @AfterEach
    void tearDown() {
        locks.forEach(ReactiveRedisLock::close);
    }

    private ReactiveRedisLock lockUser(LockOptions options) {
        ReactiveRedisLock lock = ReactiveRedisLock.create(LockUser.uri(redis), options);
        locks.add(lock);
        return lock;
    }

    private List<Object> aclLog() {
        return redis.callList("ACL", "LOG");
    }

    @Test
    void theServerTakesOneOfTheReadmeLines() {
        String version = redis.describe();
        assertThat(LockUser.rules(redis))
                .as("docs/security.md shows the ACL line for Redis 6.2, for 7.2/7.4 and Valkey 8 and for 7.0; add the one %s takes",
                        version)
                .isIn(LockUser.README_LINES);
    }

    @Test
    void theLockUserConnectsAcquiresAndReleasesWithoutAnyRefusal() {
        ReactiveRedisLock lock = lockUser(LockOptions.defaults());
        StepVerifier.create(lock.withLock("order:42", TTL, lease ->
                        Mono.fromCallable(() -> redis.call("GET", "lock:{order:42}")).subscribeOn(Schedulers.boundedElastic())
                                .map(value -> value.equals(lease.token()))))
                .expectNext(true)
                .expectComplete().verify(WAIT);
        assertThat(redis.call("EXISTS", "lock:{order:42}")).isEqualTo("0");
        assertThat(aclLog()).isEmpty();
    }

    @ParameterizedTest(name = "fair={0}")
    @ValueSource(booleans = {false, true})
    void contendedLocksAreHandedOffThroughReleaseNoticesWithoutAnyRefusal(boolean fair) {
        // A 10-minute backoff: the waiters can only get the lock in time through the pub/sub notices.
        ReactiveRedisLock client = lockUser(LockOptions.builder()
                .backoff(Duration.ofMinutes(10), Duration.ofMinutes(10)).acquireTimeout(Duration.ofMinutes(20)).build());
        ReactiveLock lock = fair ? client.fair() : client;
        Sinks.Empty<Void> holder = Sinks.empty();
        List<String> order = new CopyOnWriteArrayList<>();
        var held = lock.withLock("a", TTL, holder.asMono().then(Mono.fromRunnable(() -> order.add("holder")))).subscribe();
        await().pollInterval(Duration.ofMillis(10)).until(() -> "1".equals(redis.call("EXISTS", "lock:{a}")));
        List<Mono<String>> waiters = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            String id = "waiter-" + i;
            waiters.add(lock.withLock("a", TTL, Mono.fromCallable(() -> {
                order.add(id);
                return id;
            }).publishOn(Schedulers.parallel())));
        }
        StepVerifier.create(Flux.merge(waiters))
                .expectSubscription()
                .then(() -> await().pollInterval(Duration.ofMillis(10))
                        .until(() -> redis.call("PUBSUB", "CHANNELS", "lock:*").contains("lock:{a}:released")))
                .then(holder::tryEmitEmpty)
                .expectNextCount(3)
                .expectComplete().verify(WAIT);
        held.dispose();
        assertThat(order).hasSize(4).startsWith("holder");
        assertThat(aclLog()).isEmpty();
    }

    @Test
    void durableGrantsAreRefusedWhenTheClientIsCreatedUnlessTheUserMayRunWaitaof() {
        try (RedisServer aof = RedisServer.start("--appendonly", "yes")) {
            assumeTrue(aof.hasCommand("WAITAOF"),
                    () -> aof.describe() + " has no WAITAOF (Redis 7.2+, Valkey 8): the matrix's 7.4.1 and Valkey lines test this");
            LockOptions durable = LockOptions.builder().durableGrants(true).build();
            LockUser.create(aof);
            assertThatThrownBy(() -> ReactiveRedisLock.create(LockUser.uri(aof), durable))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("durableGrants(true)")
                    .hasMessageContaining("this user may not run WAITAOF (ACL +waitaof)");

            // docs/security.md: the 7.2+ line with +waitaof added.
            LockUser.create(aof, LockUser.NAME, LockUser.PASSWORD, LockUser.rules(aof) + " +waitaof");
            aof.call("ACL", "LOG", "RESET");
            try (ReactiveRedisLock lock = ReactiveRedisLock.create(LockUser.uri(aof), durable)) {
                StepVerifier.create(lock.withLock("order:42", TTL, Mono.just("durable")))
                        .expectNext("durable")
                        .expectComplete().verify(WAIT);
            }
            assertThat(aof.callList("ACL", "LOG")).isEmpty();
        }
    }

    @Test
    void renewalWorksForTheLockUser() {
        ReactiveRedisLock lock = lockUser(LockOptions.builder().renewalInterval(RENEWAL).build());
        AtomicInteger extensions = new AtomicInteger();
        // The body ends once renewals (every 100 ms of a 3 s TTL) have extended the lease twice.
        StepVerifier.create(lock.withLock("renewed", Duration.ofSeconds(3), (LockLease lease) -> {
                    long[] last = {lease.validUntilNanos()};
                    return Flux.interval(Duration.ofMillis(10))
                            .filter(tick -> {
                                long now = lease.validUntilNanos();
                                if (now != last[0]) {
                                    last[0] = now;
                                    extensions.incrementAndGet();
                                }
                                return extensions.get() >= 2;
                            })
                            .next()
                            .map(tick -> "renewed");
                }))
                .expectNext("renewed")
                .expectComplete().verify(WAIT);
        assertThat(aclLog()).isEmpty();
    }

    @Test
    void theSemaphoreAcquiresRenewsReleasesAndWakesAWaiterWithoutAnyRefusal() {
        // A 10-minute backoff: the waiter can only get the permit in time through the release notice.
        ReactiveSemaphore semaphore = lockUser(LockOptions.builder()
                .backoff(Duration.ofMinutes(10), Duration.ofMinutes(10)).acquireTimeout(Duration.ofMinutes(20))
                .renewalInterval(RENEWAL).build())
                .semaphore(1);
        AtomicInteger extensions = new AtomicInteger();
        // The holder ends once renewals (every 100 ms of a 3 s TTL) have extended its lease twice.
        Mono<String> holder = semaphore.withPermits("pool", 1, Duration.ofSeconds(3), (LockLease lease) -> {
            long[] last = {lease.validUntilNanos()};
            return Flux.interval(Duration.ofMillis(10))
                    .filter(tick -> {
                        long now = lease.validUntilNanos();
                        if (now != last[0]) {
                            last[0] = now;
                            extensions.incrementAndGet();
                        }
                        return extensions.get() >= 2;
                    })
                    .next()
                    .map(tick -> "holder");
        });
        // The waiter asks once the holder has its permit (awaited off the reactive threads).
        Mono<String> waiter = Mono.fromRunnable(() -> await().until(() -> "1".equals(redis.call("EXISTS", "lock:{pool}:permits"))))
                .subscribeOn(Schedulers.boundedElastic())
                .then(semaphore.withPermits("pool", 1, TTL, Mono.just("waiter")));
        StepVerifier.create(holder.mergeWith(waiter))
                // Each value comes after its own release: which of the two arrives first is not fixed.
                .recordWith(java.util.ArrayList::new)
                .expectNextCount(2)
                .consumeRecordedWith(values -> assertThat(values).containsExactlyInAnyOrder("holder", "waiter"))
                .expectComplete().verify(WAIT);
        assertThat(redis.call("EXISTS", "lock:{pool}:permits")).isEqualTo("0");
        assertThat(aclLog()).isEmpty();
    }

    @Test
    void theReadWriteLockReadsWritesWaitsRenewsAndReleasesWithoutAnyRefusal() {
        // A 10-minute backoff: the writer can only get the lock in time through the release notice.
        ReactiveReadWriteLock rw = lockUser(LockOptions.builder()
                .backoff(Duration.ofMinutes(10), Duration.ofMinutes(10)).acquireTimeout(Duration.ofMinutes(20))
                .renewalInterval(RENEWAL).build())
                .readWriteLock();
        Sinks.Empty<Void> reader = Sinks.empty();
        Disposable reading = rw.withReadLock("doc", TTL, reader.asMono()).subscribe();
        await().pollInterval(Duration.ofMillis(10)).until(() -> "1".equals(redis.call("EXISTS", "lock:{doc}:rw:readers")));
        AtomicInteger extensions = new AtomicInteger();
        // The writer waits for the reader, then ends once renewals (every 100 ms of a 3 s TTL) extended it twice.
        Mono<Long> writer = rw.withWriteLock("doc", Duration.ofSeconds(3), (LockLease lease) -> {
            long[] last = {lease.validUntilNanos()};
            return Flux.interval(Duration.ofMillis(10))
                    .filter(tick -> {
                        long now = lease.validUntilNanos();
                        if (now != last[0]) {
                            last[0] = now;
                            extensions.incrementAndGet();
                        }
                        return extensions.get() >= 2;
                    })
                    .next()
                    .map(tick -> lease.fencingToken());
        });
        StepVerifier.create(writer)
                .expectSubscription()
                .then(() -> await().pollInterval(Duration.ofMillis(10))
                        .until(() -> "1".equals(redis.call("EXISTS", "lock:{doc}:rw:writers-waiting"))))
                // ... and listens: a notice published before its SUBSCRIBE is done is not heard, and then
                // its next try is a backoff step away (10 minutes here). On a busy machine the reader's
                // release once came first, and the writer waited out the test (stress run 5, issue 36).
                .then(() -> await().pollInterval(Duration.ofMillis(10))
                        .until(() -> redis.call("PUBSUB", "CHANNELS", "lock:*").contains("lock:{doc}:rw:released")))
                .then(reader::tryEmitEmpty)
                .assertNext(fence -> assertThat(fence).isPositive())
                .expectComplete().verify(WAIT);
        reading.dispose();
        assertThat(redis.call("EXISTS", "lock:{doc}:rw:writer", "lock:{doc}:rw:readers", "lock:{doc}:rw:writers-waiting"))
                .isEqualTo("0");
        assertThat(aclLog()).isEmpty();
    }

    @Test
    void theMultiLockAcquiresRenewsReleasesAndWakesAWaiterWithoutAnyRefusal() {
        // A 10-minute backoff: the waiter can only get its names in time through the release notice.
        ReactiveMultiLock multi = lockUser(LockOptions.builder()
                .backoff(Duration.ofMinutes(10), Duration.ofMinutes(10)).acquireTimeout(Duration.ofMinutes(20))
                .renewalInterval(RENEWAL).build())
                .multiLock();
        AtomicInteger extensions = new AtomicInteger();
        // The holder ends once renewals (every 100 ms of a 3 s TTL) have extended its lease twice.
        Mono<String> holder = multi.withLocks(List.of("a", "b"), Duration.ofSeconds(3), (MultiLockLease lease) -> {
            long[] last = {lease.validUntilNanos()};
            return Flux.interval(Duration.ofMillis(10))
                    .filter(tick -> {
                        long now = lease.validUntilNanos();
                        if (now != last[0]) {
                            last[0] = now;
                            extensions.incrementAndGet();
                        }
                        return extensions.get() >= 2;
                    })
                    .next()
                    .map(tick -> "holder");
        });
        // The waiter asks once the holder has its names (awaited off the reactive threads): it is refused by b.
        Mono<String> waiter = Mono.fromRunnable(() -> await().until(() -> "2".equals(redis.call("EXISTS", "lock:{a}", "lock:{b}"))))
                .subscribeOn(Schedulers.boundedElastic())
                .then(multi.withLocks(List.of("c", "b"), TTL, Mono.just("waiter")));
        StepVerifier.create(holder.mergeWith(waiter))
                // Each value comes after its own release: which of the two arrives first is not fixed.
                .recordWith(java.util.ArrayList::new)
                .expectNextCount(2)
                .consumeRecordedWith(values -> assertThat(values).containsExactlyInAnyOrder("holder", "waiter"))
                .expectComplete().verify(WAIT);
        assertThat(redis.call("EXISTS", "lock:{a}", "lock:{b}", "lock:{c}", "lock:{b}:sleepers")).isEqualTo("0");
        assertThat(aclLog()).isEmpty();
    }

    @Test
    void aUserWithoutTheKeyPatternGetsNopermAtOnceInsteadOfARetryLoop() {
        String rules = LockUser.rules(redis).replace("~lock:*", "~other:*");
        LockUser.create(redis, "no-keys", "no-keys-password", rules);
        ReactiveRedisLock lock = ReactiveRedisLock.create(LockUser.uri(redis, "no-keys", "no-keys-password"),
                LockOptions.builder().acquireTimeout(Duration.ofMinutes(5)).build());
        locks.add(lock);
        StepVerifier.create(lock.withLock("a", TTL, Mono.just("never")))
                .expectErrorSatisfies(e -> {
                    assertThat(e).isInstanceOf(LockAcquisitionException.class)
                            .hasCauseInstanceOf(RedisCommandExecutionException.class);
                    assertThat(e.getCause().getMessage()).startsWith("NOPERM");
                    assertThat(((LockAcquisitionException) e).attempts()).as("attempts").isEqualTo(1);
                })
                .verify(WAIT);
        assertThat(redis.call("EXISTS", "lock:{a}")).isEqualTo("0");
    }

    @Test
    void aSubscriptionRefusedOnceIsSentAgainWhenTheNextWaiterJoins() {
        // The lock user first lacks its channel pattern: the first waiter's SUBSCRIBE is refused.
        redis.call("ACL", "SETUSER", LockUser.NAME, "resetchannels");
        ReactiveRedisLock lock = lockUser(LockOptions.builder().acquireTimeout(Duration.ofMinutes(1)).build());
        redis.call("SET", "lock:{a}", "someone-else", "PX", "60000");
        Disposable first = lock.withLock("a", TTL, Mono.empty()).subscribe();
        await().atMost(WAIT).until(() -> aclLog().toString().contains("lock:{a}:released"));

        redis.call("ACL", "SETUSER", LockUser.NAME, "&lock:*");
        Disposable second = lock.withLock("a", TTL, Mono.empty()).subscribe();
        await().atMost(WAIT).until(() -> redis.call("PUBSUB", "CHANNELS", "lock:*").contains("lock:{a}:released"));
        first.dispose();
        second.dispose();
    }
}
