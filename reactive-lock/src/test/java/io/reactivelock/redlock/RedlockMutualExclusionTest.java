package io.reactivelock.redlock;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.reactive.RedisReactiveCommands;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.LockOptions;
import io.reactivelock.support.RedisServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * 32 concurrent bodies do a non-atomic read-modify-write of a counter kept in a separate Redis,
 * hopping threads between read and write; Redlock over five masters must let one in at a time,
 * and the same workload without the lock must show the damage.
 */
class RedlockMutualExclusionTest {

    private static final int BODIES = 32;

    private final List<RedisServer> nodes = new ArrayList<>();
    private RedisServer counterServer;
    private RedisClient client;
    private StatefulRedisConnection<String, String> connection;
    private RedisReactiveCommands<String, String> counter;

    private final AtomicInteger occupancy = new AtomicInteger();
    private final AtomicInteger maxOccupancy = new AtomicInteger();

    @BeforeEach
    void setUp() {
        for (int i = 0; i < 5; i++) {
            nodes.add(RedisServer.start());
        }
        counterServer = RedisServer.start();
        client = RedisClient.create(counterServer.uri());
        connection = client.connect(StringCodec.UTF8);
        counter = connection.reactive();
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
        try (RedlockLock lock = RedlockLock.create(nodes.stream().map(RedisServer::uri).toList(),
                // Short backoff steps: waiters poll (Redlock has no release notices), so the steps set the
                // hand-off time, and frequent attempts also make split votes between waiters common.
                LockOptions.builder().acquireTimeout(Duration.ofSeconds(30))
                        .backoff(Duration.ofMillis(2), Duration.ofMillis(50)).build(),
                new RedlockOptions(Duration.ofSeconds(2), 0.01))) {
            run(body -> lock.withLock("counter", Duration.ofSeconds(5), body));
        }

        assertThat(counter.get("counter").block()).as("lost updates").isEqualTo(String.valueOf(BODIES));
        assertThat(maxOccupancy).as("bodies inside at once").hasValue(1);
    }

    @Test
    void withoutTheLockTheSameWorkloadLosesUpdatesOrOverlaps() {
        run(Function.identity());

        boolean lostUpdates = !String.valueOf(BODIES).equals(counter.get("counter").block());
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
            return counter.get("counter").defaultIfEmpty("0")
                    .publishOn(Schedulers.parallel())
                    .delayElement(Duration.ofMillis(2))
                    .flatMap(value -> counter.set("counter", String.valueOf(Integer.parseInt(value) + 1)))
                    .publishOn(Schedulers.parallel())
                    // doOnTerminate runs before completion travels on to the release; doFinally would run after it.
                    .doOnTerminate(occupancy::decrementAndGet);
        });
    }
}
