package io.reactivelock.faults;

import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.reactive.RedisReactiveCommands;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.BlockHoundActiveTest;
import io.reactivelock.support.CriticalSectionHistory;
import java.time.Duration;
import reactor.blockhound.BlockHound;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * A contender run in a JVM of its own by {@link MultiProcessMutualExclusionTest}. Arguments:
 * Redis port, process name, number of sections, number of processes to wait for, and
 * {@code lock} or {@code none}. Each section increments the Redis key {@code counter}
 * non-atomically (read, hop threads, write) and appends its record to the list {@code history}.
 * It installs BlockHound first, as the test JVMs do, and exits with an error if BlockHound does not
 * report a blocking call on a non-blocking thread: the lock runs policed here too.
 */
public final class LockContender {

    static final String COUNTER = "counter";
    static final String HISTORY = "history";
    static final String READY = "ready";
    private static final int IN_FLIGHT = 4;

    private LockContender() {}

    public static void main(String[] args) {
        BlockHound.install();
        BlockHoundActiveTest.requireActive();
        int port = Integer.parseInt(args[0]);
        String process = args[1];
        int sections = Integer.parseInt(args[2]);
        int processes = Integer.parseInt(args[3]);
        boolean locked = args[4].equals("lock");
        RedisURI uri = RedisURI.create("127.0.0.1", port);
        RedisClient client = RedisClient.create(uri);
        try (StatefulRedisConnection<String, String> connection = client.connect(StringCodec.UTF8);
                ReactiveRedisLock lock = ReactiveRedisLock.create(uri,
                        LockOptions.builder().acquireTimeout(Duration.ofSeconds(60)).build())) {
            RedisReactiveCommands<String, String> redis = connection.reactive();
            // Start together, so that the processes really contend rather than run one after another.
            connection.sync().incr(READY);
            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(5))
                    .until(() -> Long.parseLong(connection.sync().get(READY)) >= processes);
            CriticalSectionHistory history = new CriticalSectionHistory();
            Flux.range(0, sections)
                    .flatMap(i -> locked
                            ? lock.withLock(COUNTER, Duration.ofSeconds(5), lease -> history.record(process, COUNTER,
                                    lease.token(), lease.fencingToken(), increment(redis)))
                            : history.record(process, COUNTER, "none", 0, increment(redis)), IN_FLIGHT)
                    .then()
                    .block(Duration.ofSeconds(90));
            for (CriticalSectionHistory.Section section : history.sections()) {
                connection.sync().rpush(HISTORY, section.encode());
            }
        } finally {
            client.shutdown();
        }
    }

    private static Mono<String> increment(RedisReactiveCommands<String, String> redis) {
        return redis.get(COUNTER).defaultIfEmpty("0")
                .publishOn(Schedulers.parallel())
                .delayElement(Duration.ofMillis(1))
                .flatMap(value -> redis.set(COUNTER, String.valueOf(Long.parseLong(value) + 1)))
                .publishOn(Schedulers.parallel());
    }
}
