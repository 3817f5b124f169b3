package io.reactivelock;

import static io.reactivelock.support.CounterWorkload.BODIES;
import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.support.CounterWorkload;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import io.reactivelock.redis.ReactiveRedisLock;

/**
 * 32 concurrent bodies do a non-atomic read-modify-write of a Redis counter ({@link CounterWorkload}),
 * hopping threads between read and write; the same test without the lock must see the damage.
 */
@WithRedis
class MutualExclusionTest {

    private RedisClient client;
    private StatefulRedisConnection<String, String> connection;
    private CounterWorkload workload;
    private RedisServer server;

    private final List<Long> fencesInRunOrder = new CopyOnWriteArrayList<>();

    @BeforeEach
    void setUp(RedisServer server) {
        client = RedisClient.create(server.uri());
        connection = client.connect(StringCodec.UTF8);
        workload = new CounterWorkload(connection.reactive());
        this.server = server;
    }

    @AfterEach
    void tearDown() {
        connection.close();
        client.shutdown();
    }

    @ParameterizedTest(name = "fair={0}")
    @ValueSource(booleans = {false, true})
    void withTheLockEveryUpdateLandsOneHolderAtATimeWithIncreasingFencingTokens(boolean fair) {
        try (ReactiveRedisLock client = ReactiveRedisLock.create(server.uri(),
                LockOptions.builder().acquireTimeout(Duration.ofSeconds(30)).build())) {
            ReactiveLock lock = fair ? client.fair() : client;
            workload.run(body -> lock.withLock("counter", Duration.ofSeconds(5), lease -> {
                fencesInRunOrder.add(lease.fencingToken());
                return body;
            })).block(Duration.ofSeconds(60));
        }

        assertThat(workload.counter()).as("lost updates").isEqualTo(BODIES);
        assertThat(workload.maxOccupancy()).as("bodies inside at once").isEqualTo(1);
        assertThat(fencesInRunOrder).hasSize(BODIES).isSorted().doesNotHaveDuplicates();
    }

    @Test
    void withoutTheLockTheSameWorkloadLosesUpdatesOrOverlaps() {
        workload.run(Function.identity()).block(Duration.ofSeconds(60));

        assertThat(workload.sawRace(BODIES))
                .as("negative control: the checker must see the race when nothing prevents it")
                .isTrue();
    }
}
