package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.reactive.RedisReactiveCommands;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * 32 concurrent bodies do a non-atomic read-modify-write of a Redis counter. Each body hops
 * threads between read and write, so an overlap would really interleave rather than be
 * serialised by one Lettuce event loop; the same test without the lock must see the damage.
 */
@WithRedis
class MutualExclusionTest {

    private static final int BODIES = 32;

    private RedisClient client;
    private StatefulRedisConnection<String, String> connection;
    private RedisReactiveCommands<String, String> redis;
    private RedisServer server;

    private final AtomicInteger occupancy = new AtomicInteger();
    private final AtomicInteger maxOccupancy = new AtomicInteger();
    private final List<Long> fencesInRunOrder = new CopyOnWriteArrayList<>();

    @BeforeEach
    void setUp(RedisServer server) {
        client = RedisClient.create(server.uri());
        connection = client.connect(StringCodec.UTF8);
        redis = connection.reactive();
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
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(server.uri(),
                LockOptions.builder().fair(fair).acquireTimeout(Duration.ofSeconds(30)).build())) {
            run(body -> lock.withLock("counter", Duration.ofSeconds(5), lease -> {
                fencesInRunOrder.add(lease.fencingToken());
                return body;
            }));
        }

        assertThat(redis.get("counter").block()).as("lost updates").isEqualTo(String.valueOf(BODIES));
        assertThat(maxOccupancy).as("bodies inside at once").hasValue(1);
        assertThat(fencesInRunOrder).hasSize(BODIES).isSorted().doesNotHaveDuplicates();
    }

    @Test
    void withoutTheLockTheSameWorkloadLosesUpdatesOrOverlaps() {
        run(Function.identity());

        boolean lostUpdates = !String.valueOf(BODIES).equals(redis.get("counter").block());
        assertThat(lostUpdates || maxOccupancy.get() > 1)
                .as("negative control: the checker must see the race when nothing prevents it")
                .isTrue();
    }

    private void run(Function<Mono<String>, Mono<String>> guard) {
        Flux.range(0, BODIES)
                .flatMap(i -> guard.apply(readModifyWrite()), BODIES)
                .then()
                .block(Duration.ofSeconds(60));
    }

    private Mono<String> readModifyWrite() {
        return Mono.defer(() -> {
            maxOccupancy.accumulateAndGet(occupancy.incrementAndGet(), Math::max);
            return redis.get("counter").defaultIfEmpty("0")
                    .publishOn(Schedulers.parallel())
                    .delayElement(Duration.ofMillis(2))
                    .flatMap(value -> redis.set("counter", String.valueOf(Integer.parseInt(value) + 1)))
                    .publishOn(Schedulers.parallel())
                    // doOnTerminate runs before completion travels on to the release; doFinally would run after it.
                    .doOnTerminate(occupancy::decrementAndGet);
        });
    }
}
