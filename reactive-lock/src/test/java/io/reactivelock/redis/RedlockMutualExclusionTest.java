package io.reactivelock.redis;

import static io.reactivelock.support.CounterWorkload.BODIES;
import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.LockOptions;
import io.reactivelock.support.CounterWorkload;
import io.reactivelock.support.NeedsRedis;
import io.reactivelock.support.RedisServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * 32 concurrent bodies do a non-atomic read-modify-write of a counter kept in a separate Redis,
 * hopping threads between read and write; Redlock over five masters must let one in at a time,
 * and the same workload without the lock must show the damage.
 */
@NeedsRedis
class RedlockMutualExclusionTest {

    private final List<RedisServer> nodes = new ArrayList<>();
    private RedisServer counterServer;
    private RedisClient client;
    private StatefulRedisConnection<String, String> connection;
    private CounterWorkload workload;

    @BeforeEach
    void setUp() {
        for (int i = 0; i < 5; i++) {
            nodes.add(RedisServer.start());
        }
        counterServer = RedisServer.start();
        client = RedisClient.create(counterServer.uri());
        connection = client.connect(StringCodec.UTF8);
        workload = new CounterWorkload(connection.reactive());
    }

    @AfterEach
    void tearDown() {
        connection.close();
        client.shutdown();
        counterServer.close();
        nodes.forEach(RedisServer::close);
    }

    @Test
    void withRedlockEveryUpdateLandsAndOneHolderIsInsideAtATime() {
        try (ReactiveRedlock lock = ReactiveRedlock.create(nodes.stream().map(RedisServer::uri).toList(),
                // Short backoff steps: waiters poll (Redlock has no release notices), so the steps set the
                // hand-off time, and frequent attempts also make split votes between waiters common.
                LockOptions.builder().acquireTimeout(Duration.ofSeconds(30))
                        .backoff(Duration.ofMillis(2), Duration.ofMillis(50)).build(),
                new RedlockOptions(Duration.ofSeconds(2), 0.01))) {
            workload.run(body -> lock.withLock("counter", Duration.ofSeconds(5), body)).block(Duration.ofSeconds(60));
        }

        assertThat(workload.counter()).as("lost updates").isEqualTo(BODIES);
        assertThat(workload.maxOccupancy()).as("bodies inside at once").isEqualTo(1);
    }

    @Test
    void withoutTheLockTheSameWorkloadLosesUpdatesOrOverlaps() {
        workload.run(Function.identity()).block(Duration.ofSeconds(60));

        assertThat(workload.sawRace(BODIES))
                .as("negative control: the checker must see the race when nothing prevents it")
                .isTrue();
    }
}
