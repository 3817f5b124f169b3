package io.reactivelock.redis;

import static io.reactivelock.support.CounterWorkload.BODIES;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockLease;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.support.CommandStats;
import io.reactivelock.support.CounterWorkload;
import io.reactivelock.support.NeedsRedis;
import io.reactivelock.support.RedisCluster;
import io.reactivelock.support.RedisServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The lock on a three-master Redis Cluster through {@link ReactiveRedisLock#create(RedisClusterClient, LockOptions)}:
 * locks spread over every master, the keys of one lock never leave one slot whatever the name, one holder
 * at a time, and a lock held or wanted while its slot moves to another master ({@code ASK}, {@code TRYAGAIN},
 * {@code MOVED}).
 */
@NeedsRedis
class ClusterLockTest {

    private static final Duration TTL = Duration.ofSeconds(10);
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final Duration POLL = Duration.ofMillis(20);
    private static final LockKeys KEYS = new LockKeys("lock");
    /** Every backoff step of a waiter that only a release notice can wake within {@link #WOKEN_WITHIN}. */
    private static final Duration NOTICE_ONLY_BACKOFF = Duration.ofSeconds(30);
    /** A third of {@link #NOTICE_ONLY_BACKOFF}: a waiter that got the lock this soon was woken by a notice. */
    private static final Duration WOKEN_WITHIN = NOTICE_ONLY_BACKOFF.dividedBy(3);

    private static RedisCluster cluster;

    private RedisClusterClient client;
    /** The client of a lock that stands for another process, if a test made one. */
    private RedisClusterClient otherClient;
    private StatefulRedisClusterConnection<String, String> connection;
    private final List<ReactiveRedisLock> locks = new ArrayList<>();
    private final List<Disposable> subscriptions = new ArrayList<>();

    private CounterWorkload workload;
    private final List<Long> fencesInRunOrder = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void startCluster() {
        cluster = RedisCluster.start(3, 0);
    }

    @AfterAll
    static void stopCluster() {
        cluster.close();
    }

    @BeforeEach
    void setUp() {
        cluster.masters().forEach(master -> master.call("FLUSHALL"));
        client = RedisClusterClient.create(cluster.uris());
        client.setOptions(ClusterClientOptions.builder()
                .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                        // every adaptive trigger (MOVED, ASK, reconnects...) is on by default since Lettuce 7
                        .enablePeriodicRefresh(Duration.ofSeconds(1))
                        .build())
                .build());
        connection = client.connect(StringCodec.UTF8);
        workload = new CounterWorkload(connection.reactive());
    }

    @AfterEach
    void tearDown() {
        subscriptions.forEach(Disposable::dispose);
        locks.forEach(ReactiveRedisLock::close);
        connection.close();
        client.shutdown();
        if (otherClient != null) {
            otherClient.shutdown();
        }
    }

    private ReactiveRedisLock lock(LockOptions.Builder options) {
        ReactiveRedisLock lock = ReactiveRedisLock.create(client, options.acquireTimeout(WAIT).build());
        locks.add(lock);
        return lock;
    }

    /** The fair lock of a client of its own if {@code fair}, else that client itself. */
    private ReactiveLock lock(boolean fair, LockOptions.Builder options) {
        ReactiveRedisLock lock = lock(options);
        return fair ? lock.fair() : lock;
    }

    /** Subscribes a holder of {@code name} that keeps the lock until {@code release} completes; its lease goes to {@code lease}. */
    private void hold(ReactiveLock lock, String name, Sinks.Empty<Void> release, AtomicReference<LockLease> lease) {
        subscriptions.add(lock.withLock(name, TTL, granted -> {
            lease.set(granted);
            return release.asMono();
        }).subscribe());
    }

    @Test
    void locksOnManyNamesSpreadOverEveryMasterAndEachKeepsItsKeysOnOneNode() {
        ReactiveRedisLock lock = lock(LockOptions.builder());
        List<String> names = IntStream.range(0, 300).mapToObj(i -> "order-" + i).toList();
        CountDownLatch allHeld = new CountDownLatch(names.size());
        Sinks.Empty<Void> release = Sinks.empty();
        subscriptions.add(Flux.fromIterable(names)
                .flatMap(name -> lock.withLock(name, TTL, lease -> {
                    allHeld.countDown();
                    return release.asMono();
                }), names.size())
                .subscribe());
        await().atMost(WAIT).pollInterval(POLL).until(() -> allHeld.getCount() == 0);

        List<Set<Object>> keysPerMaster = cluster.masters().stream().map(master -> Set.copyOf(master.callList("KEYS", "*"))).toList();
        assertThat(keysPerMaster).as("every master holds some of the locks").allSatisfy(keys -> assertThat(keys).isNotEmpty());
        for (String name : names) {
            String lockKey = KEYS.lockKey(name);
            String fenceKey = LockKeys.fenceKey(lockKey);
            assertThat(keysPerMaster).as("masters holding the lock and fencing keys of " + name)
                    .filteredOn(keys -> keys.contains(lockKey) && keys.contains(fenceKey))
                    .hasSize(1);
            assertThat(cluster.slot(fenceKey)).as("slot of the fencing key of " + name).isEqualTo(cluster.slot(lockKey));
        }

        release.tryEmitEmpty();
        await().atMost(WAIT).pollInterval(POLL)
                .until(() -> cluster.masters().stream().allMatch(master -> master.callList("KEYS", "lock:*:fence").size()
                        == Long.parseLong(master.call("DBSIZE"))));
    }

    @ParameterizedTest(name = "fair={0}")
    @ValueSource(booleans = {false, true})
    void namesWithBracesKeepEveryKeyOfTheirLockInOneSlotAndHandOver(boolean fair) {
        ReactiveLock lock = lock(fair, LockOptions.builder());
        for (String name : List.of("{", "}", "{}", "}{", "{a}", "{a}b", "a{b}c", "{{}}", "x}{y", "%7B")) {
            String lockKey = KEYS.lockKey(name);
            RedisServer owner = cluster.owner(cluster.slot(lockKey));
            Sinks.Empty<Void> releaseFirst = Sinks.empty();
            AtomicReference<LockLease> first = new AtomicReference<>();
            AtomicReference<LockLease> second = new AtomicReference<>();
            hold(lock, name, releaseFirst, first);
            await().atMost(WAIT).pollInterval(POLL).until(() -> first.get() != null);
            Sinks.Empty<Void> releaseSecond = Sinks.empty();
            hold(lock, name, releaseSecond, second);
            List<String> keys = new ArrayList<>(List.of(lockKey, LockKeys.fenceKey(lockKey)));
            if (fair) {
                keys.addAll(List.of(LockKeys.queueKey(lockKey), LockKeys.waitersKey(lockKey)));
                await("the second holder to queue").atMost(WAIT).pollInterval(POLL)
                        .until(() -> "1".equals(owner.call("EXISTS", LockKeys.queueKey(lockKey))));
            }

            for (String key : keys) {
                assertThat(owner.call("EXISTS", key)).as(key + " on the node serving " + lockKey).isEqualTo("1");
                assertThat(cluster.slot(key)).as("slot of " + key).isEqualTo(cluster.slot(lockKey));
            }
            releaseFirst.tryEmitEmpty();
            await("the lock to pass to the second holder").atMost(WAIT).pollInterval(POLL).until(() -> second.get() != null);
            assertThat(second.get().fencingToken()).isGreaterThan(first.get().fencingToken());
            releaseSecond.tryEmitEmpty();
            await().atMost(WAIT).pollInterval(POLL).until(() -> "0".equals(owner.call("EXISTS", lockKey)));
        }
    }

    @ParameterizedTest(name = "fair={0}")
    @ValueSource(booleans = {false, true})
    void withTheLockEveryUpdateLandsOneHolderAtATimeWithIncreasingFencingTokens(boolean fair) {
        ReactiveLock lock = lock(fair, LockOptions.builder());

        workload.run(guardedBy(lock, "counter-lock")).block(WAIT);

        assertThat(workload.counter()).as("lost updates").isEqualTo(BODIES);
        assertThat(workload.maxOccupancy()).as("bodies inside at once").isEqualTo(1);
        assertThat(fencesInRunOrder).hasSize(BODIES).isSorted().doesNotHaveDuplicates();
    }

    @Test
    void withoutTheLockTheSameWorkloadLosesUpdatesOrOverlaps() {
        workload.run(Function.identity()).block(WAIT);

        assertThat(workload.sawRace(BODIES))
                .as("negative control: the checker must see the race when nothing prevents it")
                .isTrue();
    }

    @Test
    void aLockHeldWhileItsSlotMovesIsRenewedThroughAskAndPassesOnOnceTheSlotHasMoved() {
        ReactiveRedisLock lock = lock(LockOptions.builder().renewalInterval(Duration.ofMillis(100)));
        String name = "migrating";
        String lockKey = KEYS.lockKey(name);
        int slot = cluster.slot(lockKey);
        RedisServer source = cluster.owner(slot);
        RedisServer target = cluster.masters().stream().filter(master -> master != source).findFirst().orElseThrow();
        Sinks.Empty<Void> releaseFirst = Sinks.empty();
        AtomicReference<LockLease> first = new AtomicReference<>();
        AtomicReference<LockLease> second = new AtomicReference<>();
        hold(lock, name, releaseFirst, first);
        await().atMost(WAIT).pollInterval(POLL).until(() -> first.get() != null);

        RedisCluster.SlotMigration migration = cluster.beginMigration(slot, target);
        // The waiter is another instance (another process): a waiter of the same instance would be
        // handed the lock in-process, in one script, and never see the lock free.
        hold(lock(LockOptions.builder()), name, Sinks.empty(), second);
        assertThat(migration.moveKeys()).as("keys moved: lock and fencing record").isEqualTo(2);
        long movedAt = System.nanoTime();
        // A lease extended to more than a TTL past the move was renewed on the target, through ASK.
        await("a renewal after the move").atMost(WAIT).pollInterval(POLL)
                .until(() -> first.get().validUntilNanos() - movedAt > TTL.toNanos());
        assertThat(second.get()).as("the waiter, while the first holder renews").isNull();

        releaseFirst.tryEmitEmpty();
        // The free lock's keys are split (fencing record on the target, lock key nowhere) while the slot
        // is half moved: the target answers the waiter's attempts with TRYAGAIN until the move ends.
        await("the waiter to be told TRYAGAIN").atMost(WAIT).pollInterval(POLL)
                .until(() -> target.call("INFO", "errorstats").contains("errorstat_TRYAGAIN"));
        assertThat(second.get()).as("the waiter, while the slot is half moved").isNull();
        migration.finish();

        await("the waiter to get the lock").atMost(WAIT).pollInterval(POLL).until(() -> second.get() != null);
        assertThat(second.get().fencingToken()).isGreaterThan(first.get().fencingToken());
        assertThat(target.call("EXISTS", lockKey)).as("lock key on the new owner of the slot").isEqualTo("1");
    }

    @ParameterizedTest(name = "fair={0}")
    @ValueSource(booleans = {false, true})
    void aWaiterInAnotherProcessIsWokenByTheReleaseNoticeWhicheverMasterServesTheLock(boolean fair) {
        ReactiveLock holding = lock(fair, LockOptions.builder());
        // Another process: a Cluster client of its own, and a backoff step that only a notice can cut short.
        otherClient = RedisClusterClient.create(cluster.uris());
        ReactiveRedisLock waitingClient = ReactiveRedisLock.create(otherClient, LockOptions.builder()
                .backoff(NOTICE_ONLY_BACKOFF, NOTICE_ONLY_BACKOFF).acquireTimeout(Duration.ofMinutes(2)).build());
        locks.add(waitingClient);
        ReactiveLock waiting = fair ? waitingClient.fair() : waitingClient;
        for (RedisServer master : cluster.masters()) {
            String name = IntStream.range(0, 1000).mapToObj(i -> "notice-" + i)
                    .filter(candidate -> cluster.owner(cluster.slot(KEYS.lockKey(candidate))) == master)
                    .findFirst().orElseThrow();
            Sinks.Empty<Void> releaseFirst = Sinks.empty();
            hold(holding, name, releaseFirst, new AtomicReference<>());
            await().atMost(WAIT).pollInterval(POLL).until(() -> "1".equals(master.call("EXISTS", KEYS.lockKey(name))));
            AtomicLong ranAt = new AtomicLong();
            subscriptions.add(waiting.withLock(name, TTL, Mono.fromRunnable(() -> ranAt.set(System.nanoTime())).then(Mono.never()))
                    .subscribe());
            await("the waiter to subscribe").atMost(WAIT).pollInterval(POLL)
                    .until(() -> cluster.masters().stream().mapToLong(node -> RedisInternals.releaseListeners(node, KEYS.lockKey(name))).sum() == 1);
            long publishedBefore = CommandStats.calls(master, "publish");

            long releasedAt = System.nanoTime();
            releaseFirst.tryEmitEmpty();
            await("the waiter to wake and take the lock").atMost(WAIT).pollInterval(POLL).until(() -> ranAt.get() != 0);
            assertThat(CommandStats.calls(master, "publish") - publishedBefore)
                    .as("release notices published by the master serving " + name).isEqualTo(1);
            assertThat(Duration.ofNanos(ranAt.get() - releasedAt)).as("from the release of " + name + " to the waiter's body")
                    .isLessThan(WOKEN_WITHIN);
        }
    }

    @Test
    void oneHolderAtATimeWhileTheLocksSlotKeepsMovingBetweenMasters() {
        ReactiveRedisLock lock = lock(LockOptions.builder());
        int slot = cluster.slot(KEYS.lockKey("moving-counter-lock"));
        Sinks.Empty<Void> movesDone = Sinks.empty();
        AtomicInteger bodiesDone = new AtomicInteger();
        CompletableFuture<Void> running = Flux.range(0, Integer.MAX_VALUE)
                .takeUntilOther(movesDone.asMono())
                .flatMap(i -> guardedBy(lock, "moving-counter-lock").apply(workload.body())
                        .doOnSuccess(value -> bodiesDone.incrementAndGet()), BODIES)
                .then()
                .toFuture();

        for (int move = 0; move < 6; move++) {
            RedisServer owner = cluster.owner(slot);
            RedisServer next = cluster.masters().get((cluster.masters().indexOf(owner) + 1) % cluster.masters().size());
            cluster.beginMigration(slot, next).finish();
        }
        movesDone.tryEmitEmpty();
        running.join();

        assertThat(bodiesDone).as("bodies run while the slot moved").hasPositiveValue();
        assertThat(workload.counter()).as("lost updates").isEqualTo(bodiesDone.get());
        assertThat(workload.maxOccupancy()).as("bodies inside at once").isEqualTo(1);
        assertThat(fencesInRunOrder).hasSize(bodiesDone.get()).isSorted().doesNotHaveDuplicates();
    }

    private Function<Mono<String>, Mono<String>> guardedBy(ReactiveLock lock, String name) {
        return body -> lock.withLock(name, TTL, lease -> {
            fencesInRunOrder.add(lease.fencingToken());
            return body;
        });
    }
}
