package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockOptions;
import io.reactivelock.support.CommandStats;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * Thousands of names, each with a few waiters, as services lock (an order, a user, a tenant each):
 * a process subscribes once per name it has waiters on, not once per waiter, and keeps nothing
 * for a name once its acquisitions ended and the linger (one longest backoff step) passed.
 */
@WithRedis
class QuietNamesTest {

    private static final int NAMES = 1_000;
    private static final int WAITERS_PER_NAME = 3;
    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration PHASE = Duration.ofMinutes(2);
    /** Ample for the linger (at most 2 s here) and the last releases' replies on a loaded machine. */
    private static final Duration QUIET = Duration.ofSeconds(30);
    private static final Map<String, Integer> NOTHING = Map.of("channels", 0, "settingNow", 0,
            "backgroundReleases", 0, "releaseRetryTimers", 0, "timers", 0);

    private final RedisServer redis;

    QuietNamesTest(RedisServer redis) {
        this.redis = redis;
    }

    private static String name(int i) {
        return "user-%04d".formatted(i);
    }

    @Test
    void aProcessSubscribesOncePerNameItWaitsOnAndKeepsNothingOnceTheNamesWentQuiet() {
        // Waiters call Redis rarely (the first of a name every 2 s), so that the phase measures state, not polling.
        LockOptions options = LockOptions.builder().backoff(Duration.ofMillis(10), Duration.ofSeconds(2))
                .acquireTimeout(Duration.ofMinutes(5)).build();
        try (ReactiveRedisLock holder = ReactiveRedisLock.create(redis.uri(), options);
                ReactiveRedisLock waiters = ReactiveRedisLock.create(redis.uri(), options)) {
            Sinks.Empty<Void> end = Sinks.empty();
            for (int i = 0; i < NAMES; i++) {
                // Bodies that do not see the lease: the plain SET NX PX path, whose state must go too.
                holder.withLock(name(i), TTL, end.asMono()).subscribe();
            }
            await().atMost(PHASE).until(() -> holder.activeLeases() == NAMES);
            redis.call("CONFIG", "RESETSTAT");

            List<Disposable> waiting = new ArrayList<>();
            for (int i = 0; i < NAMES; i++) {
                for (int w = 0; w < WAITERS_PER_NAME; w++) {
                    waiting.add(waiters.withLock(name(i), TTL, Mono.empty()).subscribe());
                }
            }
            await().atMost(PHASE).until(() -> IntStream.range(0, NAMES).allMatch(i -> waiters.localWaiters(name(i)) == WAITERS_PER_NAME)
                    && channels().size() == NAMES);

            List<String> channels = channels();
            List<Object> numsub = redis.callList(concat("PUBSUB", "NUMSUB", channels));
            long subscribers = IntStream.range(0, numsub.size() / 2).mapToLong(i -> (Long) numsub.get(2 * i + 1)).sum();
            String clients = redis.call("CLIENT", "LIST");
            System.out.printf("[subscriptions] %d names x %d waiters in one process: %d channels, %d subscriptions "
                    + "(the holding process: %d channels kept)%n", NAMES, WAITERS_PER_NAME, channels.size(), subscribers,
                    holder.stateKept().get("channels"));
            assertThat(channels).as("one channel per name waited on").hasSize(NAMES);
            assertThat(subscribers).as("one subscription per name and process, whatever its waiters").isEqualTo(NAMES);
            assertThat(clients.lines().filter(c -> c.contains(" sub=" + NAMES + " ")))
                    .as("the waiting process's pub/sub connection holds them all: %s", clients).hasSize(1);
            assertThat(waiters.stateKept().get("channels")).isEqualTo(NAMES);
            assertThat(holder.stateKept().get("channels")).as("the holder waits on nothing").isZero();

            end.tryEmitEmpty(); // each name's release wakes the waiting process, whose waiters then take it in turn
            await().atMost(PHASE).until(() -> waiting.stream().allMatch(Disposable::isDisposed)
                    && holder.activeLeases() == 0 && waiters.activeLeases() == 0);
            Map<String, Long> calls = CommandStats.all(redis);
            System.out.printf("[subscriptions] per name: %.2f SUBSCRIBE, %.2f UNSUBSCRIBE so far%n",
                    calls.getOrDefault("subscribe", 0L) / (double) NAMES, calls.getOrDefault("unsubscribe", 0L) / (double) NAMES);

            // Once the linger passed: no channel, no head start, no timer, no retry kept for any name.
            await().atMost(QUIET).untilAsserted(() -> {
                assertThat(waiters.stateKept()).as("what the waiting client keeps for names").isEqualTo(NOTHING);
                assertThat(holder.stateKept()).as("what the holding client keeps for names").isEqualTo(NOTHING);
            });
            assertThat(IntStream.range(0, NAMES).map(i -> waiters.localWaiters(name(i))).sum()).isZero();
            await().atMost(QUIET).until(() -> channels().isEmpty());
            assertThat(CommandStats.calls(redis, "unsubscribe")).as("each name's channel was left once")
                    .isEqualTo(CommandStats.calls(redis, "subscribe"));
        }
    }

    @Test
    void fairWaitersAndMultiLockWaitersLeaveNothingBehindEither() {
        int names = 100;
        LockOptions options = LockOptions.builder().backoff(Duration.ofMillis(10), Duration.ofMillis(500)).build();
        try (ReactiveRedisLock holder = ReactiveRedisLock.create(redis.uri(), options);
                ReactiveRedisLock waiters = ReactiveRedisLock.create(redis.uri(), options)) {
            Sinks.Empty<Void> end = Sinks.empty();
            for (int i = 0; i < names; i++) {
                holder.fair().withLock("fair-" + name(i), TTL, lease -> end.asMono()).subscribe();
                holder.withLock(name(i), TTL, lease -> end.asMono()).subscribe();
            }
            await().atMost(PHASE).until(() -> holder.activeLeases() == 2 * names);
            List<Disposable> waiting = new ArrayList<>();
            for (int i = 0; i < names; i++) {
                for (int w = 0; w < WAITERS_PER_NAME; w++) {
                    waiting.add(waiters.fair().withLock("fair-" + name(i), TTL, lease -> Mono.empty()).subscribe());
                    waiting.add(waiters.multiLock().withLocks(List.of(name(i), name((i + 1) % names)), TTL, lease -> Mono.empty())
                            .subscribe());
                }
            }
            await().atMost(PHASE).until(() -> waiters.stateKept().get("channels") >= names);
            end.tryEmitEmpty();
            await().atMost(PHASE).until(() -> waiting.stream().allMatch(Disposable::isDisposed)
                    && holder.activeLeases() == 0 && waiters.activeLeases() == 0);
            await().atMost(QUIET).untilAsserted(() -> {
                assertThat(waiters.stateKept()).as("what the waiting client keeps for names").isEqualTo(NOTHING);
                assertThat(holder.stateKept()).as("what the holding client keeps for names").isEqualTo(NOTHING);
            });
            await().atMost(QUIET).until(() -> channels().isEmpty());
        }
    }

    private List<String> channels() {
        return redis.callList("PUBSUB", "CHANNELS", "lock:*").stream().map(String::valueOf).toList();
    }

    private static String[] concat(String first, String second, List<String> rest) {
        List<String> all = new ArrayList<>(List.of(first, second));
        all.addAll(rest);
        return all.toArray(String[]::new);
    }
}
