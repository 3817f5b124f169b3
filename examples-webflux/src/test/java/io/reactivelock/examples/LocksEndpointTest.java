package io.reactivelock.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.ReactiveLock;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.ReactiveSemaphore;
import io.reactivelock.examples.redis.RedisEndpoint;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.webtestclient.autoconfigure.AutoConfigureWebTestClient;
import org.springframework.test.web.reactive.server.WebTestClient;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * What an operator sees at {@code /actuator/locks} once it is exposed, with force-release enabled:
 * the app's lock as held, free and force-released, in the JSON the README documents.
 *
 * <p>Answers are awaited 30 s, not WebTestClient's 5: what is asserted is what the endpoint shows,
 * not how fast. On a 2-core machine under load a request of a path this JVM has not run yet took
 * longer than 5 s while its server thread was still working on it (issue 36); a failure writes
 * every thread to {@code target/thread-dumps/} (see {@link ThreadDumpOnFailure}).
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT, properties = {
        "management.endpoints.web.exposure.include=health,metrics,locks",
        "reactive-lock.inspector.force-release-enabled=true"})
@AutoConfigureWebTestClient(timeout = "PT30S")
@ExtendWith(ThreadDumpOnFailure.class)
class LocksEndpointTest {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(20);

    @Autowired
    WebTestClient web;

    @Autowired
    ReactiveRedisLock locks;

    @Autowired
    RedisEndpoint redis;

    private final List<Disposable> subscriptions = new ArrayList<>();
    private final List<AutoCloseable> ownLocks = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        subscriptions.forEach(Disposable::dispose);
        for (AutoCloseable lock : ownLocks) {
            lock.close();
        }
    }

    /** Holds {@code name} through {@code lock} until the test ends; the lease once held. */
    private LockLease hold(ReactiveLock lock, String name, Duration ttl, AtomicReference<Throwable> ended) {
        AtomicReference<LockLease> lease = new AtomicReference<>();
        subscriptions.add(lock.withLock(name, ttl, granted -> {
            lease.set(granted);
            return Sinks.empty().asMono();
        }).subscribe(value -> {}, ended::set));
        await().atMost(WAIT).until(() -> lease.get() != null);
        return lease.get();
    }

    private static String shown(LockLease lease) {
        return lease.token().substring(0, 8);
    }

    @Test
    @DisplayName("GET /actuator/locks lists the held lock with its abbreviated holder, lease left and fencing token")
    void theListShowsAHeldLock() {
        LockLease lease = hold(locks, "sale:tee-42", TTL, new AtomicReference<>());

        Page page = web.get().uri("/actuator/locks").exchange()
                .expectStatus().isOk()
                .expectBody(Page.class).returnResult().getResponseBody();

        assertThat(page.locks()).filteredOn(lock -> lock.name().equals("sale:tee-42")).singleElement().satisfies(lock -> {
            assertThat(lock.held()).isTrue();
            assertThat(lock.holder()).isEqualTo(shown(lease));
            assertThat(lock.ttlMillis()).isPositive().isLessThanOrEqualTo(TTL.toMillis());
            assertThat(lock.fencingToken()).isEqualTo(lease.fencingToken());
            assertThat(lock.waiting()).isZero();
            assertThat(lock.waiters()).isEmpty();
        });
        assertThat(page.cursor()).as("one page holds every lock of this small keyspace").isNull();
        web.get().uri("/actuator/locks").exchange().expectBody().jsonPath("$.cursor").doesNotHaveJsonPath();
    }

    @Test
    @DisplayName("GET /actuator/locks/{name} shows one lock, with a name of braces, slash, percent and Unicode, and a fair line")
    void oneLockWithAHostileNameAndAFairLine() {
        String name = "report:{q4}/2026 100% ✓";
        ReactiveRedisLock client = ReactiveRedisLock.create(redis.uri(),
                LockOptions.builder().acquireTimeout(Duration.ofMinutes(1)).build());
        ownLocks.add(client);
        ReactiveLock fair = client.fair();
        LockLease lease = hold(fair, name, TTL, new AtomicReference<>());
        subscriptions.add(fair.withLock(name, TTL, granted -> Mono.empty()).subscribe(value -> {}, error -> {}));
        await().atMost(WAIT).until(() -> waiting(name) == 1);

        web.get().uri("/actuator/locks/{name}", name).exchange()
                .expectStatus().isOk()
                .expectBody()
                .jsonPath("$.name").isEqualTo(name)
                .jsonPath("$.held").isEqualTo(true)
                .jsonPath("$.holder").isEqualTo(shown(lease))
                .jsonPath("$.waiting").isEqualTo(1)
                .jsonPath("$.waiters[0].token").value(String.class, token -> assertThat(token).hasSize(8).isNotEqualTo(shown(lease)))
                .jsonPath("$.waiters[0].leaseLeftMillis").value(Long.class, left -> assertThat(left).isPositive());
        // The slash as typed rather than encoded: the rest of the path is the name.
        web.get().uri(path -> path.path("/actuator/locks/{first}/{second}").build("report:{q4}", "2026 100% ✓")).exchange()
                .expectStatus().isOk()
                .expectBody()
                .jsonPath("$.name").isEqualTo(name)
                .jsonPath("$.holder").isEqualTo(shown(lease));
    }

    private long waiting(String name) {
        return web.get().uri("/actuator/locks/{name}", name).exchange()
                .expectStatus().isOk()
                .expectBody(Lock.class).returnResult().getResponseBody().waiting();
    }

    @Test
    @DisplayName("a free lock is shown as free: no holder, no lease, no semaphore or read-write lock")
    void aFreeLock() {
        web.get().uri("/actuator/locks/{name}", "never-taken").exchange()
                .expectStatus().isOk()
                .expectBody()
                .jsonPath("$.name").isEqualTo("never-taken")
                .jsonPath("$.held").isEqualTo(false)
                .jsonPath("$.holder").doesNotHaveJsonPath()
                .jsonPath("$.ttlMillis").doesNotHaveJsonPath()
                .jsonPath("$.fencingToken").doesNotHaveJsonPath()
                .jsonPath("$.semaphore").doesNotHaveJsonPath()
                .jsonPath("$.readWrite").doesNotHaveJsonPath();
    }

    @Test
    @DisplayName("a name held as a semaphore and as a read-write lock is listed, with its permits, its readers and a waiting writer")
    void aSemaphoreAndAReadWriteLock() {
        ReactiveRedisLock client = ReactiveRedisLock.create(redis.uri(),
                LockOptions.builder().acquireTimeout(Duration.ofMinutes(1)).build());
        ownLocks.add(client);
        ReactiveSemaphore semaphore = client.semaphore(4);
        ReactiveReadWriteLock readWrite = client.readWriteLock();
        AtomicReference<LockLease> permits = new AtomicReference<>();
        subscriptions.add(semaphore.withPermits("exports", 2, TTL, lease -> {
            permits.set(lease);
            return Mono.never();
        }).subscribe());
        AtomicReference<LockLease> reader = new AtomicReference<>();
        subscriptions.add(readWrite.withReadLock("exports", TTL, lease -> {
            reader.set(lease);
            return Mono.never();
        }).subscribe());
        await().atMost(WAIT).until(() -> permits.get() != null && reader.get() != null);
        subscriptions.add(readWrite.withWriteLock("exports", TTL, Mono.empty()).subscribe(value -> {}, error -> {}));
        await("the writer waiting").atMost(WAIT).until(() -> web.get().uri("/actuator/locks/exports").exchange()
                .expectBody(Lock.class).returnResult().getResponseBody().readWrite().writersWaiting() == 1);

        web.get().uri("/actuator/locks/exports").exchange()
                .expectStatus().isOk()
                .expectBody()
                .jsonPath("$.held").isEqualTo(false)
                .jsonPath("$.semaphore.permits").isEqualTo(2)
                .jsonPath("$.semaphore.holders[0].token").isEqualTo(shown(permits.get()))
                .jsonPath("$.semaphore.holders[0].permits").isEqualTo(2)
                .jsonPath("$.semaphore.holders[0].leaseLeftMillis").value(Long.class, left ->
                        assertThat(left).isPositive().isLessThanOrEqualTo(TTL.toMillis()))
                .jsonPath("$.readWrite.readers").isEqualTo(1)
                .jsonPath("$.readWrite.writersWaiting").isEqualTo(1)
                .jsonPath("$.readWrite.writer").doesNotHaveJsonPath();
        Page page = web.get().uri("/actuator/locks").exchange()
                .expectStatus().isOk()
                .expectBody(Page.class).returnResult().getResponseBody();
        assertThat(page.locks()).extracting(Lock::name).containsOnlyOnce("exports");
    }

    @Test
    @DisplayName("DELETE /actuator/locks/{name}?holder= releases only the holder seen, and the holder then loses its lease")
    void forceReleaseOnlyForTheHolderSeen() {
        AtomicReference<Throwable> ended = new AtomicReference<>();
        LockLease lease = hold(locks, "stuck", Duration.ofSeconds(3), ended);

        web.delete().uri("/actuator/locks/{name}?holder={holder}", "stuck", "00000000").exchange()
                .expectStatus().isOk()
                .expectBody().jsonPath("$.released").isEqualTo(false);
        web.get().uri("/actuator/locks/stuck").exchange().expectBody().jsonPath("$.holder").isEqualTo(shown(lease));

        web.delete().uri("/actuator/locks/{name}?holder={holder}", "stuck", shown(lease)).exchange()
                .expectStatus().isOk()
                .expectBody()
                .jsonPath("$.name").isEqualTo("stuck")
                .jsonPath("$.holder").isEqualTo(shown(lease))
                .jsonPath("$.released").isEqualTo(true);
        web.get().uri("/actuator/locks/stuck").exchange().expectBody().jsonPath("$.held").isEqualTo(false);
        await("the holder to find out at its next renewal").atMost(WAIT).until(() -> ended.get() != null);
        assertThat(ended.get()).isInstanceOf(LockLostException.class);
    }

    @Test
    @DisplayName("a page size out of range or a cursor the endpoint never gave is a 400")
    void badRequests() {
        web.get().uri("/actuator/locks?count=0").exchange().expectStatus().isBadRequest();
        web.get().uri("/actuator/locks?cursor=not-a-cursor").exchange().expectStatus().isBadRequest();
    }

    record Page(List<Lock> locks, String cursor) {}

    record Lock(String name, boolean held, String holder, Long ttlMillis, Long fencingToken, long waiting, List<Waiter> waiters,
            ReadWrite readWrite) {}

    record ReadWrite(String writer, Long writerTtlMillis, Long fencingToken, long readers, long writersWaiting) {}

    record Waiter(String token, long leaseLeftMillis) {}
}
