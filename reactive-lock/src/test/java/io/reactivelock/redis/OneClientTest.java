package io.reactivelock.redis;

import static io.reactivelock.redis.EveryPrimitive.TTL;
import static io.reactivelock.redis.EveryPrimitive.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisURI;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.ReactiveMultiLock;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.ReactiveSemaphore;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;
import reactor.test.publisher.PublisherProbe;

/**
 * One {@link ReactiveRedisLock} per deployment, on a standalone server: every primitive it hands out
 * works over its two connections (one for commands, one for pub/sub), the primitives of one name
 * know each other, and every view takes an acquire timeout of its own.
 */
@WithRedis
class OneClientTest {

    /** The name the test's clients give their connections, to tell them apart in {@code CLIENT LIST}. */
    static final String CLIENT_NAME = "one-client-test";

    private RedisServer redis;
    private final List<ReactiveRedisLock> clients = new ArrayList<>();
    private final List<Disposable> subscriptions = new ArrayList<>();

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
    }

    @AfterEach
    void tearDown() {
        subscriptions.forEach(Disposable::dispose);
        clients.forEach(ReactiveRedisLock::close);
    }

    private ReactiveRedisLock client(LockOptions options) {
        ReactiveRedisLock client = ReactiveRedisLock.create(
                RedisURI.builder(redis.uri()).withClientName(CLIENT_NAME).build(), options);
        clients.add(client);
        return client;
    }

    /** The {@code CLIENT LIST} lines of the connections named {@link #CLIENT_NAME}, read by a connection of the test's own. */
    static List<String> namedConnections(RedisServer server) {
        return server.call("CLIENT", "LIST").lines().filter(line -> line.contains(" name=" + CLIENT_NAME + " ")).toList();
    }

    /** The value of {@code field} in a {@code CLIENT LIST} line. */
    static String field(String clientListLine, String field) {
        for (String pair : clientListLine.split(" ")) {
            if (pair.startsWith(field + "=")) {
                return pair.substring(field.length() + 1);
            }
        }
        throw new IllegalArgumentException("no " + field + " in " + clientListLine);
    }

    private long connectionsReceived() {
        return redis.call("INFO", "stats").lines().filter(line -> line.startsWith("total_connections_received:"))
                .map(line -> Long.parseLong(line.substring(line.indexOf(':') + 1).strip())).findFirst().orElseThrow();
    }

    // ---- One pair of connections ----

    @Test
    void everyPrimitiveOfOneClientWorksOverItsTwoConnectionsOneForCommandsOneForPubSub() {
        ReactiveRedisLock client = client(LockOptions.defaults());
        List<String> opened = namedConnections(redis);
        assertThat(opened).as("connections of a new client").hasSize(2);
        List<String> ids = opened.stream().map(line -> field(line, "id")).toList();

        long receivedBefore = connectionsReceived();
        EveryPrimitive.useEachOnce(client, "order:1", "order:2");
        // Each call above ran on the client's connections: the server accepted no other connection
        // meanwhile, but the one that asks it now.
        assertThat(connectionsReceived() - receivedBefore).as("connections accepted while every primitive was used, "
                + "besides this query's own").isEqualTo(1);
        assertThat(namedConnections(redis)).as("the client's connections after using every primitive")
                .extracting(line -> field(line, "id")).containsExactlyInAnyOrderElementsOf(ids);

        // A waiter subscribes to the release notices of its name: on one of the two, the pub/sub one.
        Sinks.Empty<Void> release = Sinks.empty();
        subscriptions.add(client.withLock("order:1", TTL, release.asMono()).subscribe());
        await().atMost(WAIT).until(() -> "1".equals(redis.call("EXISTS", "lock:{order:1}")));
        subscriptions.add(client.withLock("order:1", TTL, Mono.just("next")).subscribe());
        await("the waiter's subscription").atMost(WAIT).until(() -> namedConnections(redis).stream()
                .anyMatch(line -> field(line, "flags").contains("P")));
        List<String> waiting = namedConnections(redis);
        assertThat(waiting).as("the client's connections while a waiter listens").hasSize(2)
                .extracting(line -> field(line, "id")).containsExactlyInAnyOrderElementsOf(ids);
        assertThat(waiting).filteredOn(line -> field(line, "flags").contains("P"))
                .as("pub/sub connections").singleElement()
                .satisfies(line -> assertThat(field(line, "sub")).as("channels subscribed").isEqualTo("1"));
        release.tryEmitEmpty();
    }

    // ---- The primitives of one name know each other ----

    @Test
    void aMultiLockAndALockOfOneClientOnOneNameExcludeEachOther() {
        ReactiveRedisLock client = client(LockOptions.defaults());
        ReactiveMultiLock multiOnce = client.multiLock().withAcquireTimeout(Duration.ZERO);

        Sinks.Empty<Void> lockDone = Sinks.empty();
        subscriptions.add(client.withLock("a", TTL, lockDone.asMono()).subscribe());
        await().atMost(WAIT).until(() -> "1".equals(redis.call("EXISTS", "lock:{a}")));
        StepVerifier.create(multiOnce.withLocks(List.of("a", "b"), TTL, Mono.just("never")))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockAcquisitionException.class)
                        .extracting(error -> ((LockAcquisitionException) error).reason())
                        .isEqualTo(LockAcquisitionException.Reason.BUSY))
                .verify(WAIT);
        assertThat(redis.call("EXISTS", "lock:{b}")).as("b, not taken by the refused multi-lock").isEqualTo("0");
        lockDone.tryEmitEmpty();
        await().atMost(WAIT).until(() -> "0".equals(redis.call("EXISTS", "lock:{a}")));

        Sinks.Empty<Void> multiDone = Sinks.empty();
        subscriptions.add(client.multiLock().withLocks(List.of("a", "b"), TTL, multiDone.asMono()).subscribe());
        await().atMost(WAIT).until(() -> "2".equals(redis.call("EXISTS", "lock:{a}", "lock:{b}")));
        for (ReactiveLock lock : List.of(client.withAcquireTimeout(Duration.ZERO), client.fair().withAcquireTimeout(Duration.ZERO))) {
            StepVerifier.create(lock.withLock("a", TTL, Mono.just("never")))
                    .expectErrorSatisfies(e -> assertThat(((LockAcquisitionException) e).reason())
                            .isEqualTo(LockAcquisitionException.Reason.BUSY))
                    .verify(WAIT);
        }
        multiDone.tryEmitEmpty();
        await().atMost(WAIT).until(() -> "0".equals(redis.call("EXISTS", "lock:{a}", "lock:{b}")));
        assertThat(client.withAcquireTimeout(Duration.ZERO).withLock("a", TTL, Mono.just("free again")).block(WAIT))
                .isEqualTo("free again");
    }

    // ---- Views and their acquire timeouts ----

    /** A zero acquire timeout: one attempt, refused BUSY, and the body never runs. */
    private static void refusedAtTheOneTry(Function<Mono<String>, Mono<String>> acquire) {
        PublisherProbe<String> body = PublisherProbe.of(Mono.just("never"));
        StepVerifier.create(acquire.apply(body.mono()))
                .expectErrorSatisfies(e -> {
                    assertThat(e).isInstanceOf(LockAcquisitionException.class);
                    LockAcquisitionException refused = (LockAcquisitionException) e;
                    assertThat(refused.reason()).isEqualTo(LockAcquisitionException.Reason.BUSY);
                    assertThat(refused.attempts()).as("attempts").isEqualTo(1);
                })
                .verify(WAIT);
        body.assertWasNotSubscribed();
    }

    @Test
    void aZeroAcquireTimeoutGivesTheSemaphoreReadWriteAndMultiLockViewsOneTry() {
        // Patient by default: the one try comes from the view's timeout, not the options'.
        ReactiveRedisLock client = client(LockOptions.builder().acquireTimeout(Duration.ofMinutes(5)).build());
        Sinks.Empty<Void> release = Sinks.empty();
        subscriptions.add(client.semaphore(1).withPermit("s", TTL, release.asMono()).subscribe());
        subscriptions.add(client.readWriteLock().withWriteLock("rw", TTL, release.asMono()).subscribe());
        subscriptions.add(client.withLock("m", TTL, release.asMono()).subscribe());
        await().atMost(WAIT).until(() -> "3".equals(redis.call("EXISTS", "lock:{s}:permits", "lock:{rw}:rw:writer", "lock:{m}")));

        ReactiveSemaphore semaphore = client.semaphore(1).withAcquireTimeout(Duration.ZERO);
        assertThat(semaphore.capacity()).as("the view keeps its capacity").isEqualTo(1);
        refusedAtTheOneTry(body -> semaphore.withPermit("s", TTL, body));
        ReactiveReadWriteLock readWrite = client.readWriteLock().withAcquireTimeout(Duration.ZERO);
        refusedAtTheOneTry(body -> readWrite.withReadLock("rw", TTL, body));
        refusedAtTheOneTry(body -> readWrite.withWriteLock("rw", TTL, body));
        ReactiveMultiLock multi = client.multiLock().withAcquireTimeout(Duration.ZERO);
        refusedAtTheOneTry(body -> multi.withLocks(List.of("m", "n"), TTL, body));

        release.tryEmitEmpty();
        await().atMost(WAIT).until(() -> "0".equals(redis.call("EXISTS", "lock:{s}:permits", "lock:{rw}:rw:writer", "lock:{m}")));
        assertThat(semaphore.withPermit("s", TTL, Mono.just("s")).block(WAIT)).as("the views still work once free").isEqualTo("s");
        assertThat(readWrite.withReadLock("rw", TTL, Mono.just("rw")).block(WAIT)).isEqualTo("rw");
        assertThat(multi.withLocks(List.of("m", "n"), TTL, Mono.just("m")).block(WAIT)).isEqualTo("m");
    }

    @Test
    void aSemaphoresCapacityIsCheckedWhenTheViewIsMadeAndItsPermitsAtEachCall() {
        ReactiveRedisLock client = client(LockOptions.defaults());
        assertThatThrownBy(() -> client.semaphore(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("capacity must be at least 1, got 0");
        ReactiveSemaphore three = client.semaphore(3);
        assertThatThrownBy(() -> three.withPermits("a", 4, TTL, Mono.just(1))).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("permits must be from 1 to the capacity (3), got 4");
        assertThatThrownBy(() -> three.withPermits("a", 0, TTL, Mono.just(1))).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("permits must be from 1 to the capacity (3), got 0");
        assertThatThrownBy(() -> three.withAcquireTimeout(Duration.ofMillis(-1))).isInstanceOf(IllegalArgumentException.class);
        assertThat(redis.call("DBSIZE")).as("nothing sent").isEqualTo("0");
    }
}
