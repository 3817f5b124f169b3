package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisClient;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.support.CommandStats;
import io.reactivelock.support.NeedsRedis;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.TcpProxy;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;

/**
 * Replica-acknowledged grants ({@link LockOptions.Builder#replicaAcknowledgement(int)}) on a master
 * and one replica that replicates through a {@link TcpProxy}: freezing the proxy holds the
 * replication stream and the replica's acknowledgements while the master still counts the replica
 * as connected, as a lagging replica would.
 */
@NeedsRedis
class ReplicaAcknowledgedGrantsTest {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final Duration ACK_TIMEOUT = Duration.ofMillis(200);
    /**
     * An acquire timeout that outlasts several attempts and their WAITs (Redis 6.2 ended a 200 ms
     * WAIT after about a second here), so that each acquisition is refused by a WAIT that answered.
     */
    private static final Duration SEVERAL_WAITS = Duration.ofSeconds(4);
    /** How late a timer on this shared 2-core machine may tell a holder or fail an acquisition. */
    private static final Duration SLACK = Duration.ofMillis(300);

    private RedisServer master;
    private TcpProxy link;
    private RedisServer replica;

    @BeforeEach
    void startMasterAndReplica() {
        master = RedisServer.start();
        link = TcpProxy.to(master);
        replica = RedisServer.start("--replicaof", "127.0.0.1", Integer.toString(link.port()));
        await("the replica to be in sync").atMost(WAIT).pollInterval(Duration.ofMillis(20))
                .until(() -> replica.call("INFO", "replication").contains("master_link_status:up")
                        && master.info("replication", "connected_slaves").equals("1"));
    }

    @AfterEach
    void stopServers() {
        replica.close();
        link.close();
        master.close();
    }

    private ReactiveRedisLock client(Function<LockOptions.Builder, LockOptions.Builder> options) {
        return ReactiveRedisLock.create(master.uri(), options.apply(LockOptions.builder()
                .replicaAckTimeout(ACK_TIMEOUT).acquireTimeout(WAIT)).build());
    }

    @Test
    void aGrantReachesTheBodyOnlyOnceTheReplicaHasTheLock() {
        try (ReactiveRedisLock redis = client(o -> o)) {
            link.freeze();
            AtomicReference<String> onReplica = new AtomicReference<>();
            CompletableFuture<String> held = redis.withLock("a", TTL, (LockLease lease) -> onReplica("GET", "lock:{a}")
                    .doOnNext(onReplica::set).thenReturn(lease.token())).toFuture();
            await("two WAITs that the replica did not answer, or the body").atMost(WAIT)
                    .until(() -> CommandStats.calls(master, "wait") >= 2 || held.isDone());
            assertThat(held).as("the acquisition while the replica cannot acknowledge").isNotDone();

            link.unfreeze();
            String token = held.orTimeout(WAIT.toSeconds(), TimeUnit.SECONDS).join();
            assertThat(onReplica.get()).as("the lock key on the replica when the body ran").isEqualTo(token);
        }
    }

    @Test
    void aGrantTheReplicaNeverAcknowledgesEndsWithNotReplicatedNamingTheReplicaAndLeavesNoLock() {
        try (ReactiveRedisLock redis = client(o -> o.acquireTimeout(SEVERAL_WAITS))) {
            link.freeze();
            assertThatThrownBy(() -> redis.withLock("a", TTL, Mono.just("ran")).block(WAIT))
                    .isInstanceOfSatisfying(LockAcquisitionException.class, e -> {
                        assertThat(e.reason()).isEqualTo(LockAcquisitionException.Reason.NOT_REPLICATED);
                        assertThat(e.getMessage()).contains("1 connected replica").contains("127.0.0.1:" + replica.port());
                    });
            await("the unacknowledged grant released").atMost(WAIT).until(() -> master.call("EXISTS", "lock:{a}").equals("0"));
        }
    }

    @Test
    void everyPrimitiveWaitsForTheReplica() {
        try (ReactiveRedisLock redis = client(o -> o.acquireTimeout(SEVERAL_WAITS))) {
            Map<String, Mono<Integer>> each = new LinkedHashMap<>();
            each.put("lock", redis.withLock("a", TTL, (LockLease lease) -> Mono.just(1)));
            each.put("lock by a plain SET", redis.withLock("b", TTL, Mono.just(1)));
            each.put("fair lock", redis.fair().withLock("c", TTL, (LockLease lease) -> Mono.just(1)));
            each.put("semaphore", redis.semaphore(3).withPermits("d", 2, TTL, (LockLease lease) -> Mono.just(1)));
            each.put("read lock", redis.readWriteLock().withReadLock("e", TTL, Mono.just(1)));
            each.put("write lock", redis.readWriteLock().withWriteLock("f", TTL, (LockLease lease) -> Mono.just(1)));
            each.put("multi-lock", redis.multiLock().withLocks(List.of("g", "h"), TTL, lease -> Mono.just(1)));
            link.freeze();
            // All at once, so that the class waits out one acquire timeout, not seven.
            Map<String, CompletableFuture<Integer>> frozen = new LinkedHashMap<>();
            each.forEach((what, acquisition) -> frozen.put(what, acquisition.toFuture()));
            frozen.forEach((what, result) -> assertThat(result).as(what).failsWithin(WAIT)
                    .withThrowableOfType(ExecutionException.class)
                    .havingCause()
                    .isInstanceOfSatisfying(LockAcquisitionException.class,
                            e -> assertThat(e.reason()).isEqualTo(LockAcquisitionException.Reason.NOT_REPLICATED)));
            link.unfreeze();
            each.forEach((what, acquisition) -> assertThat(acquisition.block(WAIT)).as(what).isEqualTo(1));
        }
    }

    @Test
    void anAcquisitionFailsAtOnceWhenTheMasterReportsNoReplicaLeft() {
        try (ReactiveRedisLock redis = client(o -> o)) {
            replica.stop();
            link.refuseConnections(true);
            master.call("CLIENT", "KILL", "TYPE", "slave");
            await("the master to see its replica gone").atMost(WAIT)
                    .until(() -> master.info("replication", "connected_slaves").equals("0"));
            assertThatThrownBy(() -> redis.withLock("a", TTL, Mono.just("ran")).block(WAIT))
                    .isInstanceOfSatisfying(LockAcquisitionException.class, e -> {
                        assertThat(e.reason()).isEqualTo(LockAcquisitionException.Reason.NOT_REPLICATED);
                        assertThat(e.getMessage()).contains("0 connected replicas");
                        // One attempt and its WAIT, not retried until the 20 s acquire timeout.
                        assertThat(e.attempts()).as("attempts").isEqualTo(1);
                        assertThat(e.waited()).as("waited").isLessThan(WAIT.dividedBy(2));
                    });
        }
    }

    @Test
    void aRenewalTheReplicaDoesNotAcknowledgeDoesNotExtendTheLease() {
        Duration ttl = Duration.ofMillis(1500);
        try (ReactiveRedisLock redis = client(o -> o)) {
            AtomicReference<LockLease> held = new AtomicReference<>();
            Sinks.Empty<Void> never = Sinks.empty();
            CompletableFuture<Void> body = redis.withLock("a", ttl, (LockLease lease) -> {
                held.set(lease);
                return never.asMono();
            }).toFuture();
            await("the lock held and renewed once").atMost(WAIT).until(() -> held.get() != null
                    && CommandStats.calls(master, "pexpire") >= 1);
            long frozenAt = System.nanoTime();
            link.freeze();
            long renewalsBefore = CommandStats.calls(master, "pexpire");
            await("renewals run on the master after the freeze").atMost(WAIT)
                    .until(() -> CommandStats.calls(master, "pexpire") >= renewalsBefore + 2);
            assertThat(held.get().validUntilNanos() - frozenAt).as("the lease, extended only by acknowledged renewals")
                    .isLessThanOrEqualTo(ttl.toNanos());
            assertThatThrownBy(() -> body.get(WAIT.toSeconds(), TimeUnit.SECONDS)).hasCauseInstanceOf(LockLostException.class);
            assertThat(System.nanoTime() - frozenAt).as("told by the end of the last acknowledged lease")
                    .isLessThanOrEqualTo(ttl.plus(SLACK).toNanos());
        }
    }

    @Test
    void anAcquisitionWhoseAttemptStillWaitsForItsWaitAtTheDeadlineFailsNotReplicated() {
        Duration acquireTimeout = Duration.ofMillis(500);
        try (ReactiveRedisLock redis = client(o -> o.acquireTimeout(acquireTimeout).replicaAckTimeout(Duration.ofSeconds(10))
                .commandTimeout(Duration.ofSeconds(30)))) {
            link.freeze();
            assertThatThrownBy(() -> redis.withLock("a", TTL, Mono.just("ran")).block(WAIT))
                    .isInstanceOfSatisfying(LockAcquisitionException.class, e -> {
                        assertThat(e.reason()).isEqualTo(LockAcquisitionException.Reason.NOT_REPLICATED);
                        assertThat(e.getMessage()).contains("still waiting for the replicas");
                        assertThat(e.attempts()).as("attempts").isEqualTo(1);
                    });
            await("the unacknowledged grant released").atMost(WAIT).until(() -> master.call("EXISTS", "lock:{a}").equals("0"));
        }
    }

    /**
     * The grants' connection is cut while its {@code WAIT} is out: Lettuce sends the {@code WAIT}
     * again on the new connection, where it answers at once (that connection wrote nothing), so it
     * cannot vouch for a grant whose reply came on the old one.
     */
    @Test
    void aWaitAnsweredOnAReconnectedConnectionDoesNotAcknowledgeAGrantMadeBeforeIt() {
        try (ReactiveRedisLock redis = client(o -> o.acquireTimeout(Duration.ZERO).replicaAckTimeout(Duration.ofSeconds(10))
                .commandTimeout(Duration.ofSeconds(30)))) {
            aGrantWhoseWaitsConnectionIsCutIsNotAcknowledged(redis);
        }
    }

    /**
     * The same with a {@code RedisClient} of the user's, whose options are Lettuce's defaults: there
     * Lettuce replays the {@code WAIT} on the new connection instead of failing it, where Redis 7
     * answers it at once (the server matrix runs this on 7.4.1 and Valkey 8), and the lock tells the
     * two connections apart itself.
     */
    @Test
    void aWaitReplayedOnAReconnectedConnectionOfTheUsersClientDoesNotAcknowledgeAGrantMadeBeforeIt() {
        RedisClient users = RedisClient.create(master.uri());
        try (ReactiveRedisLock redis = ReactiveRedisLock.create(users, LockOptions.builder().acquireTimeout(Duration.ZERO)
                .replicaAckTimeout(Duration.ofSeconds(10)).commandTimeout(Duration.ofSeconds(30)).build())) {
            aGrantWhoseWaitsConnectionIsCutIsNotAcknowledged(redis);
        } finally {
            users.shutdown();
        }
    }

    private void aGrantWhoseWaitsConnectionIsCutIsNotAcknowledged(ReactiveRedisLock redis) {
        link.freeze();
        CompletableFuture<String> held = redis.withLock("a", TTL, (LockLease lease) -> onReplica("EXISTS", "lock:{a}"))
                .toFuture();
        AtomicReference<String> waiting = new AtomicReference<>();
        await("the grant's WAIT blocked on the master").atMost(WAIT).pollInterval(Duration.ofMillis(20))
                .until(() -> {
                    waiting.set(master.call("CLIENT", "LIST").lines().filter(l -> l.contains(" cmd=wait"))
                            .map(l -> l.substring(l.indexOf("id=") + 3, l.indexOf(' '))).findFirst().orElse(null));
                    return waiting.get() != null;
                });
        master.call("CLIENT", "KILL", "ID", waiting.get());
        assertThatThrownBy(() -> held.get(WAIT.toSeconds(), TimeUnit.SECONDS))
                .as("the acquisition, while the replica has not acknowledged (the body answers the key on the replica)")
                .cause().isInstanceOfSatisfying(LockAcquisitionException.class, e -> {
                    System.out.println("the acquisition whose WAIT's connection was cut: " + e);
                    assertThat(e.reason()).isIn(LockAcquisitionException.Reason.NOT_REPLICATED,
                            LockAcquisitionException.Reason.REDIS_UNAVAILABLE);
                });
        await("the unacknowledged grant released").atMost(WAIT).until(() -> master.call("EXISTS", "lock:{a}").equals("0"));
    }

    @Test
    void withAcknowledgementsOffTheGrantReachesTheBodyWhileTheReplicaLags() {
        try (ReactiveRedisLock redis = client(o -> o.replicaAcknowledgement(0))) {
            link.freeze();
            assertThat(redis.withLock("a", TTL, (LockLease lease) -> onReplica("EXISTS", "lock:{a}")).block(WAIT))
                    .as("the lock key on the replica when the body ran").isEqualTo("0");
            assertThat(CommandStats.calls(master, "wait")).isZero();
        }
    }

    @Test
    void aLockGrantedWithAcknowledgementsSurvivesTheMasterKilledAndTheReplicaPromoted() {
        assertThat(survivesFailover(LockOptions.ALL_REPLICAS)).as("the lock key on the promoted replica").isTrue();
    }

    @Test
    void aLockGrantedWithoutAcknowledgementsIsLostWhenTheMasterIsKilledAndTheReplicaPromoted() {
        assertThat(survivesFailover(0)).as("the lock key on the promoted replica").isFalse();
    }

    /**
     * Replication lags by 2 x 300 ms; the master is killed as soon as the body runs, the replication
     * link cut (what it held is lost with the master), and the replica promoted: whether it has the
     * holder's lock and fencing record.
     */
    private boolean survivesFailover(int replicas) {
        link.latency(Duration.ofMillis(300));
        try (ReactiveRedisLock redis = client(o -> o.replicaAcknowledgement(replicas).replicaAckTimeout(Duration.ofSeconds(3))
                .commandTimeout(Duration.ofSeconds(10)))) {
            AtomicReference<LockLease> held = new AtomicReference<>();
            Sinks.Empty<Void> never = Sinks.empty();
            redis.withLock("a", TTL, (LockLease lease) -> {
                held.set(lease);
                return never.asMono();
            }).subscribe(v -> { }, e -> { });
            await("the body").atMost(WAIT).pollInterval(Duration.ofMillis(2)).until(() -> held.get() != null);
            master.kill();
            link.refuseConnections(true);
            link.cutConnections();
            replica.call("REPLICAOF", "NO", "ONE");
            String value = replica.call("GET", "lock:{a}");
            if (value == null) {
                return false;
            }
            assertThat(value).isEqualTo(held.get().token());
            assertThat(replica.call("GET", "lock:{a}:fence")).as("the fencing record").isEqualTo(Long.toString(held.get().fencingToken()));
            return true;
        }
    }

    /**
     * The stall measurement: with every {@code WAIT} slow (the replica 2 x 25 ms away), rounds of 16
     * acquisitions of unrelated names share {@code WAIT}s instead of queueing one behind another's;
     * prints their latencies (the uncontended cost, option on and off, is the bench's replica cell).
     */
    @Test
    void unrelatedGrantsShareOneWaitInsteadOfQueueingBehindEachOthers() {
        link.latency(Duration.ofMillis(25));
        int rounds = 10;
        int width = 16;
        try (ReactiveRedisLock redis = client(o -> o)) {
            redis.withLock("warm-up", TTL, Mono.just(1)).block(WAIT);
            long waitsBefore = CommandStats.calls(master, "wait");
            Queue<Long> micros = new ConcurrentLinkedQueue<>();
            for (int r = 0; r < rounds; r++) {
                int round = r;
                Flux.range(0, width).flatMap(i -> {
                    long start = System.nanoTime();
                    return redis.withLock("u" + round + ":" + i, TTL, Mono.fromRunnable(
                            () -> micros.add((System.nanoTime() - start) / 1000)));
                }, width).blockLast(WAIT);
            }
            long waits = CommandStats.calls(master, "wait") - waitsBefore;
            System.out.printf("replica-acknowledged grants, WAIT round trip >= 50 ms: %d grants in rounds of %d, %d WAITs,"
                    + " acquisition p50 %d ms, p99 %d ms, max %d ms%n", micros.size(), width, waits,
                    percentile(List.copyOf(micros), 50) / 1000, percentile(List.copyOf(micros), 99) / 1000,
                    percentile(List.copyOf(micros), 100) / 1000);
            assertThat(micros).hasSize(rounds * width);
            // Serialised, each round would take 16 WAITs; shared, about two (the first grant's, then the others').
            assertThat(waits).as("WAITs for %d grants", rounds * width).isBetween((long) rounds, rounds * 4L);
        }
    }

    /** {@code command} on the replica, off the reactive thread a body runs on. */
    private Mono<String> onReplica(String... command) {
        return Mono.fromCallable(() -> replica.call(command)).subscribeOn(Schedulers.boundedElastic());
    }

    private static long percentile(List<Long> values, int p) {
        List<Long> sorted = values.stream().sorted().toList();
        return sorted.get(Math.min(sorted.size() - 1, (int) Math.ceil(p / 100.0 * sorted.size()) - 1));
    }
}
