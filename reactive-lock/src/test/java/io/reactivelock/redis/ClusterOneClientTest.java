package io.reactivelock.redis;

import static io.reactivelock.redis.EveryPrimitive.TTL;
import static io.reactivelock.redis.EveryPrimitive.WAIT;
import static io.reactivelock.redis.OneClientTest.CLIENT_NAME;
import static io.reactivelock.redis.OneClientTest.field;
import static io.reactivelock.redis.OneClientTest.namedConnections;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLease;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.ReactiveSemaphore;
import io.reactivelock.support.NeedsRedis;
import io.reactivelock.support.RedisCluster;
import io.reactivelock.support.RedisServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/**
 * One {@link ReactiveRedisLock} on a three-master Cluster: every primitive works through the client's
 * command connection (routed by slot: one node connection per master it talks to, and the default one)
 * and its one pub/sub connection, opening no other; the semaphore and the read-write lock work on a
 * Cluster, on names served by every master.
 */
@NeedsRedis
class ClusterOneClientTest {

    private static final LockKeys KEYS = new LockKeys(LockOptions.DEFAULT_KEY_PREFIX);

    private static RedisCluster cluster;
    /** One name served by each master. */
    private static List<String> onEachMaster;

    private RedisClusterClient lettuce;
    private final List<ReactiveRedisLock> clients = new ArrayList<>();
    private final List<Disposable> subscriptions = new ArrayList<>();

    @BeforeAll
    static void startCluster() {
        cluster = RedisCluster.start(3, 0);
        onEachMaster = cluster.masters().stream()
                .map(master -> IntStream.range(0, 1000).mapToObj(i -> "name-" + i)
                        .filter(name -> cluster.owner(cluster.slot(KEYS.lockKey(name))) == master).findFirst().orElseThrow())
                .toList();
    }

    @AfterAll
    static void stopCluster() {
        cluster.close();
    }

    @BeforeEach
    void setUp() {
        cluster.masters().forEach(master -> master.call("FLUSHALL"));
        lettuce = RedisClusterClient.create(cluster.uris().stream()
                .map(uri -> RedisURI.builder(uri).withClientName(CLIENT_NAME).build()).toList());
    }

    @AfterEach
    void tearDown() {
        subscriptions.forEach(Disposable::dispose);
        clients.forEach(ReactiveRedisLock::close);
        lettuce.shutdown();
    }

    private ReactiveRedisLock client(LockOptions options) {
        ReactiveRedisLock client = ReactiveRedisLock.create(lettuce, options);
        clients.add(client);
        return client;
    }

    /** The client's connections on every master, as {@code CLIENT LIST} lines. */
    private static List<String> namedConnectionsOnEveryMaster() {
        return cluster.masters().stream().flatMap(master -> namedConnections(master).stream()).toList();
    }

    private static Set<String> ids(List<String> lines) {
        return Set.copyOf(lines.stream().map(line -> field(line, "laddr") + "/" + field(line, "addr") + "/" + field(line, "id")).toList());
    }

    @Test
    void everyPrimitiveOfOneClientWorksOverItsCommandConnectionAndOnePubSubConnection() {
        ReactiveRedisLock client = client(LockOptions.defaults());
        // The lock on a name of every master opens the command connection's node connections.
        for (String name : onEachMaster) {
            assertThat(client.withLock(name, TTL, Mono.just(name)).block(WAIT)).isEqualTo(name);
        }
        List<String> afterTheLock = namedConnectionsOnEveryMaster();
        assertThat(afterTheLock).as("the client's connections: at most one per master for commands, and pub/sub")
                .hasSizeBetween(cluster.masters().size() + 1, cluster.masters().size() + 2);

        for (int i = 0; i < onEachMaster.size(); i++) {
            String name = onEachMaster.get(i);
            EveryPrimitive.useEachButTheInspectorOnce(client, name, onEachMaster.get((i + 1) % onEachMaster.size()),
                    used -> assertThat(ids(namedConnectionsOnEveryMaster()))
                            .as("the client's connections after its %s on %s", used, name).isEqualTo(ids(afterTheLock)));
        }

        // A waiter subscribes to the release notices of its name: on the one pub/sub connection.
        String name = onEachMaster.get(0);
        Sinks.Empty<Void> release = Sinks.empty();
        subscriptions.add(client.withLock(name, TTL, release.asMono()).subscribe());
        await().atMost(WAIT).until(() -> "1".equals(cluster.owner(cluster.slot(KEYS.lockKey(name))).call("EXISTS", KEYS.lockKey(name))));
        subscriptions.add(client.withLock(name, TTL, Mono.just("next")).subscribe());
        await("the waiter's subscription").atMost(WAIT).until(() -> namedConnectionsOnEveryMaster().stream()
                .anyMatch(line -> field(line, "flags").contains("P")));
        List<String> waiting = namedConnectionsOnEveryMaster();
        assertThat(ids(waiting)).as("the client's connections while a waiter listens").isEqualTo(ids(afterTheLock));
        assertThat(waiting).filteredOn(line -> field(line, "flags").contains("P")).as("pub/sub connections").hasSize(1);
        release.tryEmitEmpty();
    }

    @Test
    void theInspectorReadsThroughTheClientsConnectionsOnEveryMaster() {
        ReactiveRedisLock client = client(LockOptions.defaults());
        for (String name : onEachMaster) {
            assertThat(client.withLock(name, TTL, lease -> Mono.just(name)).block(WAIT)).isEqualTo(name);
        }
        Set<String> afterTheLock = ids(namedConnectionsOnEveryMaster());
        for (String name : onEachMaster) {
            EveryPrimitive.inspectOnce(client, name);
            assertThat(ids(namedConnectionsOnEveryMaster())).as("the client's connections after inspecting %s", name)
                    .isEqualTo(afterTheLock);
        }
    }

    @Test
    void theSemaphoreKeepsItsCapacityOnNamesOfEveryMaster() {
        ReactiveRedisLock client = client(LockOptions.builder().acquireTimeout(Duration.ofSeconds(30)).build());
        ReactiveSemaphore semaphore = client.semaphore(2);
        ReactiveSemaphore once = semaphore.withAcquireTimeout(Duration.ZERO);
        for (String name : onEachMaster) {
            Sinks.Empty<Void> holdersDone = Sinks.empty();
            subscriptions.add(semaphore.withPermit(name, TTL, holdersDone.asMono()).subscribe());
            subscriptions.add(semaphore.withPermit(name, TTL, holdersDone.asMono()).subscribe());
            await().atMost(WAIT).until(() -> held(name, "permits") == 2);
            StepVerifier.create(once.withPermit(name, TTL, Mono.just("never")))
                    .expectErrorSatisfies(e -> assertThat(((LockAcquisitionException) e).reason())
                            .as("a third permit of " + name).isEqualTo(LockAcquisitionException.Reason.BUSY))
                    .verify(WAIT);
            assertThat(client.withAcquireTimeout(Duration.ZERO).withLock(name, TTL, Mono.just("lock")).block(WAIT))
                    .as("the lock of the same name is another lock").isEqualTo("lock");

            Mono<Long> both = semaphore.withPermits(name, 2, TTL,
                    lease -> Mono.fromCallable(() -> held(name, "permits")).subscribeOn(Schedulers.boundedElastic()));
            StepVerifier.create(both)
                    .expectSubscription()
                    .then(holdersDone::tryEmitEmpty)
                    .expectNext(1L) // one holder, of both permits
                    .expectComplete()
                    .verify(WAIT);
            assertThat(held(name, "permits")).as("holders of " + name + " left").isZero();
        }
    }

    @Test
    void theReadWriteLockLetsReadersShareAndAWriterExcludeThemOnNamesOfEveryMaster() {
        ReactiveRedisLock client = client(LockOptions.builder().acquireTimeout(Duration.ofSeconds(30)).build());
        ReactiveReadWriteLock rw = client.readWriteLock();
        ReactiveReadWriteLock once = rw.withAcquireTimeout(Duration.ZERO);
        for (String name : onEachMaster) {
            Sinks.Empty<Void> readersDone = Sinks.empty();
            subscriptions.add(rw.withReadLock(name, TTL, readersDone.asMono()).subscribe());
            subscriptions.add(rw.withReadLock(name, TTL, readersDone.asMono()).subscribe());
            await().atMost(WAIT).until(() -> held(name, "rw:readers") == 2);
            StepVerifier.create(once.withWriteLock(name, TTL, Mono.just("never")))
                    .expectErrorSatisfies(e -> assertThat(((LockAcquisitionException) e).reason())
                            .isEqualTo(LockAcquisitionException.Reason.BUSY))
                    .verify(WAIT);

            Mono<Long> writer = rw.withWriteLock(name, TTL, (LockLease lease) -> Mono.fromCallable(() -> {
                assertThat(held(name, "rw:readers")).as("readers while the writer of " + name + " is inside").isZero();
                StepVerifier.create(once.withReadLock(name, TTL, Mono.just("never")))
                        .expectError(LockAcquisitionException.class).verify(WAIT);
                return lease.fencingToken();
            }).subscribeOn(Schedulers.boundedElastic()));
            StepVerifier.create(writer)
                    .expectSubscription()
                    .then(() -> await().atMost(WAIT).until(() -> held(name, "rw:writers-waiting") == 1))
                    .then(readersDone::tryEmitEmpty)
                    .assertNext(fence -> assertThat(fence).isPositive())
                    .expectComplete()
                    .verify(WAIT);
            assertThat(once.withReadLock(name, TTL, Mono.just("read")).block(WAIT)).isEqualTo("read");
        }
    }

    /** How many members the sorted set {@code suffix} of {@code name}'s keys has, on the master that serves it (0 if none). */
    private static long held(String name, String suffix) {
        RedisServer owner = cluster.owner(cluster.slot(KEYS.lockKey(name)));
        return Long.parseLong(owner.call("ZCARD", KEYS.lockKey(name) + ":" + suffix));
    }
}
