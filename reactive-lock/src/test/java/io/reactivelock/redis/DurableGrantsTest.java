package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLease;
import io.reactivelock.LockOptions;
import io.reactivelock.support.CommandStats;
import io.reactivelock.support.NeedsRedis;
import io.reactivelock.support.RedisServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;

/**
 * Durable grants ({@link LockOptions.Builder#durableGrants(boolean)}) on a standalone master:
 * refused when the client is created on a server without {@code WAITAOF} (the default build's
 * Redis 6.2; skipped, saying so, on 7.2 and later) or with the append-only file off; with it on
 * ({@code appendfsync everysec}), each grant reaches its body after a {@code WAITAOF} of its own,
 * and a lock granted just before the master is killed with {@code SIGKILL} is still there, with its
 * fencing record, when the master restarts from its append-only file. With a replica, a grant
 * waits for the replica's append-only file too, and a replica without one never counts. The tests that need
 * {@code WAITAOF} are skipped, saying so, on a server without it: run them with
 * {@code -Dredis.server=../shared/servers/redis-server-7.4.1} (or {@code valkey-server-8.0.1}).
 *
 * <p>What the restart does not prove: a {@code SIGKILL} of the process leaves what it wrote to its
 * append-only file in the kernel's page cache, fsynced or not, so a lock granted without
 * {@code WAITAOF} survives it too; only a crash of the machine (or its power) would tell them apart.
 */
@NeedsRedis
class DurableGrantsTest {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final String[] AOF = {"--appendonly", "yes", "--appendfsync", "everysec"};

    private final List<RedisServer> servers = new ArrayList<>();

    @AfterEach
    void stopServers() {
        servers.forEach(RedisServer::close);
    }

    private RedisServer server(String... args) {
        RedisServer redis = RedisServer.start(args);
        servers.add(redis);
        return redis;
    }

    private static LockOptions durable() {
        return LockOptions.builder().durableGrants(true).build();
    }

    /** Whether {@code redis} has {@code WAITAOF}: Redis 7.2 on, and Valkey 8. */
    private static boolean hasWaitaof(RedisServer redis) {
        return redis.hasCommand("WAITAOF");
    }

    private static void assumeWaitaof(RedisServer redis) {
        assumeTrue(hasWaitaof(redis), () -> redis.describe() + " has no WAITAOF (Redis 7.2+, Valkey 8): durable grants are"
                + " tested with -Dredis.server=../shared/servers/redis-server-7.4.1 or valkey-server-8.0.1");
    }

    @Test
    void aServerWithoutWaitaofIsRefusedWhenTheClientIsCreatedSayingWhatItNeeds() {
        RedisServer redis = server(AOF);
        assumeFalse(hasWaitaof(redis), () -> redis.describe() + " has WAITAOF: the refusal of a server without it is tested"
                + " on Redis 6.2 (the default build) and 7.0");
        assertThatThrownBy(() -> ReactiveRedisLock.create(redis.uri(), durable()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("durableGrants(true)")
                .hasMessageContaining("the server has no WAITAOF, which Redis 7.2 and Valkey 8 have");
        await("the refused client's connections closed").atMost(WAIT)
                .until(() -> redis.info("clients", "connected_clients").trim().equals("1"));
    }

    @Test
    void aMasterWithItsAppendOnlyFileOffIsRefusedWhenTheClientIsCreated() {
        RedisServer redis = server();
        assumeWaitaof(redis);
        assertThatThrownBy(() -> ReactiveRedisLock.create(redis.uri(), durable()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("durableGrants(true)")
                .hasMessageContaining("append-only file is off (appendonly no)");
        await("the refused client's connections closed").atMost(WAIT)
                .until(() -> redis.info("clients", "connected_clients").trim().equals("1"));
    }

    @Test
    void eachDurableGrantReachesItsBodyAfterAWaitaofOfItsOwn() {
        RedisServer redis = server(AOF);
        assumeWaitaof(redis);
        int grants = 5;
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), durable())) {
            long before = CommandStats.calls(redis, "waitaof");
            for (int i = 0; i < grants; i++) {
                // What the master counted when the body ran: this grant's WAITAOF already answered.
                long seenByBody = lock.withLock("a" + i, TTL, (LockLease lease) -> Mono.fromCallable(
                        () -> CommandStats.calls(redis, "waitaof")).subscribeOn(Schedulers.boundedElastic())).block(WAIT);
                assertThat(seenByBody - before).as("WAITAOFs run when grant %d reached its body", i).isEqualTo(i + 1L);
            }
            assertThat(CommandStats.calls(redis, "waitaof") - before).as("WAITAOFs, one per grant").isEqualTo(grants);
            assertThat(CommandStats.calls(redis, "wait")).as("WAITs (no replica)").isZero();
        }
    }

    @Test
    void aDurableGrantIsOnTheMasterRestartedFromItsAppendOnlyFileAfterASigkill() {
        RedisServer redis = server(AOF);
        assumeWaitaof(redis);
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), durable())) {
            AtomicReference<LockLease> held = new AtomicReference<>();
            Sinks.Empty<Void> never = Sinks.empty();
            lock.withLock("a", TTL, (LockLease lease) -> {
                held.set(lease);
                return never.asMono();
            }).subscribe(v -> { }, e -> { });
            await("the body").atMost(WAIT).pollInterval(Duration.ofMillis(2)).until(() -> held.get() != null);
            redis.kill();
            redis.restartFromDisk();
            assertThat(redis.call("GET", "lock:{a}")).as("the lock key after the restart").isEqualTo(held.get().token());
            assertThat(redis.call("GET", "lock:{a}:fence")).as("the fencing record after the restart")
                    .isEqualTo(Long.toString(held.get().fencingToken()));
        }
    }

    @Test
    void withAReplicaEachDurableGrantWaitsForTheReplicasAppendOnlyFileToo() {
        RedisServer master = server(AOF);
        assumeWaitaof(master);
        RedisServer replica = replicaOf(master, AOF);
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(master.uri(), durable())) {
            long before = CommandStats.calls(master, "waitaof");
            String onReplica = lock.withLock("a", TTL, (LockLease lease) -> Mono.fromCallable(() -> replica.call("GET", "lock:{a}"))
                    .subscribeOn(Schedulers.boundedElastic()).map(token -> token.equals(lease.token()) ? "the holder's" : token))
                    .block(WAIT);
            assertThat(onReplica).as("the lock key on the replica when the body ran").isEqualTo("the holder's");
            // One, or more when the replica was still rewriting the AOF it made after its first sync (not yet fsynced).
            assertThat(CommandStats.calls(master, "waitaof") - before).as("WAITAOFs").isPositive();
        }
    }

    @Test
    void aReplicaWithItsAppendOnlyFileOffFailsDurableGrantsNotReplicatedAskingAboutIt() {
        RedisServer master = server(AOF);
        assumeWaitaof(master);
        replicaOf(master);
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(master.uri(), LockOptions.builder().durableGrants(true)
                .replicaAckTimeout(Duration.ofMillis(200)).acquireTimeout(Duration.ofSeconds(1)).build())) {
            assertThatThrownBy(() -> lock.withLock("a", TTL, Mono.just("ran")).block(WAIT))
                    .isInstanceOfSatisfying(LockAcquisitionException.class, e -> {
                        assertThat(e.reason()).isEqualTo(LockAcquisitionException.Reason.NOT_REPLICATED);
                        assertThat(e.getMessage()).contains("WAITAOF 1 1 200 answered [1, 0]")
                                .contains("is appendonly on on the replicas?");
                    });
            await("the unacknowledged grant released").atMost(WAIT).until(() -> master.call("EXISTS", "lock:{a}").equals("0"));
        }
    }

    /** A replica of {@code master} started with {@code args}, once the master counts it as connected and in sync. */
    private RedisServer replicaOf(RedisServer master, String... args) {
        List<String> all = new ArrayList<>(List.of(args));
        all.addAll(List.of("--replicaof", "127.0.0.1", Integer.toString(master.port())));
        RedisServer replica = server(all.toArray(String[]::new));
        await("the replica in sync").atMost(WAIT).pollInterval(Duration.ofMillis(20))
                .until(() -> replica.call("INFO", "replication").contains("master_link_status:up")
                        && "1".equals(master.info("replication", "connected_slaves")));
        return replica;
    }
}
