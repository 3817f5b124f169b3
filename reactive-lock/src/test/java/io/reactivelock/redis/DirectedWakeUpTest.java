package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisClient;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.support.CommandStats;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * Issue 14: with waiters in separate lock instances (as separate processes are), a non-fair
 * release wakes one of them by name instead of one per instance, so one hand-off costs about one
 * acquire attempt in the whole fleet. Each waiter's backoff step is at least 5 s (max backoff 10 s,
 * jitter 0.5), so within the test only the release can wake anyone.
 */
@WithRedis
class DirectedWakeUpTest {

    private static final int INSTANCES = 8;
    private static final Duration TTL = Duration.ofSeconds(30);
    private static final LockOptions PATIENT = LockOptions.builder()
            .backoff(Duration.ofMillis(1), Duration.ofSeconds(10)).acquireTimeout(Duration.ofMinutes(1)).build();

    private final RedisServer redis;
    private final List<ReactiveRedisLock> locks = new ArrayList<>();

    DirectedWakeUpTest(RedisServer redis) {
        this.redis = redis;
    }

    @AfterEach
    void close() {
        locks.forEach(ReactiveRedisLock::close);
    }

    private ReactiveRedisLock instance() {
        return instance(PATIENT);
    }

    /** A lock instance of its own (its own client and connections), as another process would have. */
    private ReactiveRedisLock instance(LockOptions options) {
        ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), options);
        locks.add(lock);
        return lock;
    }

    @Test
    void aProcessThatWaitsForTheSameLockAgainWithinTheLingerSubscribesOnceAndUnsubscribesAfterIt() {
        Duration linger = Duration.ofSeconds(3); // the longest backoff step
        ReactiveRedisLock lock = instance(LockOptions.builder()
                .backoff(Duration.ofMillis(1), linger).acquireTimeout(Duration.ofMinutes(1)).build());
        redis.call("CONFIG", "RESETSTAT");
        for (int round = 1; round <= 3; round++) {
            redis.call("SET", "lock:{a}", "outsider", "PX", "60000");
            CompletableFuture<Integer> waiter = lock.withLock("a", TTL, Mono.just(round)).toFuture();
            await().until(() -> "1".equals(redis.call("ZCARD", "lock:{a}:sleepers")) && RedisInternals.releaseListeners(redis, "lock:{a}") == 1);
            // The outsider releases as a holder in another process does: the waiter is woken by name.
            release("a", "outsider");
            assertThat(waiter.join()).isEqualTo(round);
        }
        assertThat(CommandStats.calls(redis, "subscribe")).as("subscriptions for three waits, each within the linger of the last")
                .isEqualTo(1);
        await().atMost(linger.multipliedBy(3)).until(() -> RedisInternals.releaseListeners(redis, "lock:{a}") == 0);
    }

    /** A release as a holder in another process sends it, given the sleepers mark: a grace period of a minute. */
    private String release(String name, String token) {
        String lock = "lock:{" + name + "}";
        return redis.call("EVAL", LockScripts.RELEASE.source(), "2", lock, lock + ":sleepers", token,
                lock + ":released", "60000");
    }

    @Test
    void aProcessThatReleasesAndAsksAgainDoesNotOvertakeTheSleeperItWoke() {
        // The shortest backoff step is 1 ms: only the lock kept for the woken sleeper stops the releaser's next try.
        LockOptions options = LockOptions.builder().backoff(Duration.ofMillis(1), Duration.ofSeconds(10))
                .acquireTimeout(Duration.ofMinutes(1)).build();
        ReactiveRedisLock first = instance(options);
        ReactiveRedisLock other = instance(options);
        List<String> entered = new CopyOnWriteArrayList<>();
        Sinks.Empty<Void> firstBody = Sinks.empty();
        CompletableFuture<?> twice = first.withLock("x", TTL, Mono.fromRunnable(() -> entered.add("first")).then(firstBody.asMono()))
                .then(first.withLock("x", TTL, Mono.fromRunnable(() -> entered.add("first again"))))
                .toFuture();
        await().until(() -> "1".equals(redis.call("EXISTS", "lock:{x}")));
        CompletableFuture<?> once = other.withLock("x", TTL, Mono.fromRunnable(() -> entered.add("other"))).toFuture();
        await().until(() -> "1".equals(redis.call("ZCARD", "lock:{x}:sleepers")) && RedisInternals.releaseListeners(redis, "lock:{x}") == 1);

        firstBody.tryEmitEmpty(); // its release keeps the lock for the other process's sleeper; it asks again at once
        twice.join();
        once.join();
        assertThat(entered).as("the woken sleeper went before the releaser's next acquisition")
                .containsExactly("first", "other", "first again");
    }

    @Test
    void aReleaseThatFindsTheHoldersOwnTokenOldestAmongTheSleepersKeepsTheLockForTheNextOneInstead() {
        // An attempt of the holder's that found the lock busy ran after its grant (a NOSCRIPT retry).
        redis.call("SET", "lock:{a}", "holder+", "PX", "60000"); // sleepers marked
        redis.call("SET", "lock:{a}:fence", "7", "PX", "60000"); // fencing token 7
        redis.call("ZADD", "lock:{a}:sleepers", "1", "holder", "2", "sleeper");
        assertThat(release("a", "holder")).as("released, and kept for a sleeper").isEqualTo("2");
        assertThat(redis.call("GET", "lock:{a}")).as("kept for the sleeper").isEqualTo("~sleeper");
        assertThat(redis.call("EXISTS", "lock:{a}:sleepers")).as("the sleeper was popped, the holder's entry too")
                .isEqualTo("0");
        assertThat(redis.call("EVAL", LockScripts.RENEW.source(), "1", "lock:{a}", "sleeper", "60000"))
                .as("a kept lock is nobody's to renew").isEqualTo("0");

        String claimed = redis.call("EVAL", LockScripts.ACQUIRE.source(), "3", "lock:{a}", "lock:{a}:fence", "lock:{a}:sleepers",
                "sleeper", "60000", "120000", "1000", "2", "1");
        assertThat(Long.parseLong(claimed)).as("the sleeper's claim: a new fencing token").isGreaterThan(7);
        assertThat(redis.call("GET", "lock:{a}")).as("claimed, marked: more may sleep").isEqualTo("sleeper+");
    }

    @Test
    void aLongestStepUnderAMillisecondStillKeepsTheLockForTheSleeperForAMillisecond() throws Exception {
        // A grace period of 0 ms would make the release's SET ... PX fail after it popped the sleeper.
        LockOptions options = LockOptions.builder().backoff(Duration.ofNanos(100_000), Duration.ofNanos(500_000))
                .acquireTimeout(Duration.ofMinutes(1)).build();
        Sinks.Empty<Void> holderDone = Sinks.empty();
        CompletableFuture<Void> holder = instance(options).withLock("a", TTL, holderDone.asMono()).toFuture();
        await().until(() -> "1".equals(redis.call("EXISTS", "lock:{a}")));
        CompletableFuture<Integer> waiter = instance(options).withLock("a", TTL, Mono.just(1)).toFuture();
        await().until(() -> "1".equals(redis.call("ZCARD", "lock:{a}:sleepers")));

        holderDone.tryEmitEmpty();
        holder.get(10, TimeUnit.SECONDS);
        assertThat(waiter.get(10, TimeUnit.SECONDS)).as("the waiter got the lock long before its 30 s lease would end").isEqualTo(1);
        assertThat(redis.call("EXISTS", "lock:{a}")).as("and released it").isEqualTo("0");
    }

    @Test
    void aWaiterCancelledWhileTheLockIsKeptForItPassesTheLockOnAtOnce() {
        redis.call("SET", "lock:{a}", "outsider", "PX", "60000");
        ReactiveRedisLock lock = instance(LockOptions.builder().backoff(Duration.ofMillis(1), Duration.ofMinutes(1))
                .acquireTimeout(Duration.ofMinutes(5)).build());
        Disposable waiter = lock.withLock("a", TTL, Mono.just(1)).subscribe();
        await().until(() -> "1".equals(redis.call("ZCARD", "lock:{a}:sleepers")));
        String token = String.valueOf(redis.callList("ZRANGE", "lock:{a}:sleepers", "0", "0").get(0));
        // The outsider's release keeps the lock for the waiter for a minute; its notice goes where nobody listens.
        assertThat(redis.call("EVAL", LockScripts.RELEASE.source(), "2", "lock:{a}", "lock:{a}:sleepers",
                "outsider", "nobody-listens", "60000")).isEqualTo("2");
        assertThat(redis.call("GET", "lock:{a}")).isEqualTo("~" + token);

        waiter.dispose(); // its release of what it may hold frees the lock kept for it, long before the minute
        await().atMost(Duration.ofSeconds(10)).until(() -> "0".equals(redis.call("EXISTS", "lock:{a}")));
    }

    @Test
    void aPlainWaiterThatMarksAFairHoldersLockDoesNotKeepItFromReleasing() throws Exception {
        // One mode per name is the advice, but the two exclude each other: a plain waiter's sleepers mark
        // on a fair holder's lock must not make the fair release miss its own token.
        Sinks.Empty<Void> body = Sinks.empty();
        CompletableFuture<Void> fairHolder = instance().fair().withLock("a", TTL, body.asMono()).toFuture();
        await().until(() -> "1".equals(redis.call("EXISTS", "lock:{a}")));
        // Trying again at least every second: what is checked is that the fair release frees the lock, not how soon the waiter hears of it.
        CompletableFuture<Integer> plainWaiter = instance(LockOptions.builder().backoff(Duration.ofMillis(1), Duration.ofSeconds(1))
                .acquireTimeout(Duration.ofMinutes(1)).build()).withLock("a", TTL, Mono.just(1)).toFuture();
        await().until(() -> String.valueOf(redis.call("GET", "lock:{a}")).endsWith("+"));

        body.tryEmitEmpty();
        fairHolder.get(10, TimeUnit.SECONDS);
        assertThat(plainWaiter.get(10, TimeUnit.SECONDS)).as("the waiter got the lock long before its 30 s lease would end")
                .isEqualTo(1);
        await().atMost(Duration.ofSeconds(10)).until(() -> "0".equals(redis.call("EXISTS", "lock:{a}")));
    }

    @Test
    void aSleeperThatDiedHoldsTheLockUpForOneGracePeriodOnly() throws Exception {
        // Grace period and every backoff step: 200 ms. A sleeper that started first and is gone.
        LockOptions options = LockOptions.builder().backoff(Duration.ofMillis(200), Duration.ofMillis(200))
                .acquireTimeout(Duration.ofMinutes(1)).build();
        ReactiveRedisLock lock = instance(options);
        ReactiveRedisLock other = instance(options);
        Sinks.Empty<Void> holderDone = Sinks.empty();
        CompletableFuture<Void> holder = other.withLock("a", TTL, holderDone.asMono()).toFuture();
        await().until(() -> "1".equals(redis.call("EXISTS", "lock:{a}")));
        redis.call("ZADD", "lock:{a}:sleepers", "1", "dead");
        CompletableFuture<Long> waiter = lock.withLock("a", TTL, Mono.fromCallable(System::nanoTime)).toFuture();
        await().until(() -> "2".equals(redis.call("ZCARD", "lock:{a}:sleepers")));

        long released = System.nanoTime();
        holderDone.tryEmitEmpty();
        holder.get(10, TimeUnit.SECONDS);
        // The grace period (200 ms), then the live sleeper's next poll (one 200 ms step), with 500 ms of
        // slack for a loaded machine: the command timeout (2 s) as the grace period, or a lock kept for good, fails here.
        Duration grace = options.maxBackoff(); // one longest backoff step, the command timeout (2 s) being longer
        assertThat(Duration.ofNanos(waiter.get(10, TimeUnit.SECONDS) - released)).as("from the release to the live sleeper's body")
                .isLessThanOrEqualTo(grace.plus(options.maxBackoff()).plusMillis(500));
    }

    @Test
    void aWaiterThatGetsTheLockIsNoLongerAmongTheSleepersSoReleasesWakeTheOthers() {
        redis.call("SET", "lock:{a}", "outsider", "PX", "60000");
        ReactiveRedisLock lock = instance(LockOptions.builder()
                .backoff(Duration.ofMillis(1), Duration.ofMillis(20)).acquireTimeout(Duration.ofMinutes(1)).build());
        Sinks.Empty<Void> body = Sinks.empty();
        CompletableFuture<Void> held = lock.withLock("a", TTL, body.asMono()).toFuture();
        await().until(() -> "1".equals(redis.call("ZCARD", "lock:{a}:sleepers")));

        redis.call("DEL", "lock:{a}"); // the outsider's lease ends without a notice: the waiter's next poll takes it
        await().until(() -> {
            String holder = redis.call("GET", "lock:{a}");
            return holder != null && !holder.equals("outsider");
        });
        assertThat(redis.call("ZCARD", "lock:{a}:sleepers")).as("the holder's token left the sleepers with its grant")
                .isEqualTo("0");
        body.tryEmitEmpty();
        held.join();
    }

    @Test
    void aReleaseWakesOneWaiterOfAnotherInstanceAndItAloneTriesAgain() throws Exception {
        Sinks.Empty<Void> holderDone = Sinks.empty();
        CompletableFuture<Void> holder = instance().withLock("a", TTL, holderDone.asMono()).toFuture();
        await().until(() -> "1".equals(redis.call("EXISTS", "lock:{a}")));
        List<Sinks.Empty<Void>> bodies = new ArrayList<>();
        List<CompletableFuture<Void>> waiters = new ArrayList<>();
        List<Integer> entered = new CopyOnWriteArrayList<>();
        for (int i = 0; i < INSTANCES; i++) {
            int id = i;
            Sinks.Empty<Void> body = Sinks.empty();
            bodies.add(body);
            ReactiveRedisLock lock = instance();
            waiters.add(lock.withLock("a", TTL, body.asMono().doOnSubscribe(s -> entered.add(id))).toFuture());
            await().until(() -> lock.localWaiters("a") == 1);
            long registered = Long.parseLong(redis.call("ZCARD", "lock:{a}:sleepers"));
            assertThat(registered).as("registered in the order they started").isEqualTo(i + 1L);
        }
        await().until(() -> String.valueOf(INSTANCES).equals(redis.call("ZCARD", "lock:{a}:sleepers")));
        redis.call("CONFIG", "RESETSTAT");

        holderDone.tryEmitEmpty();
        holder.get(10, TimeUnit.SECONDS);
        await().until(() -> waiters.stream().filter(w -> !w.isDone()).count() == INSTANCES
                && "1".equals(redis.call("EXISTS", "lock:{a}")));

        assertThat(CommandStats.calls(redis, "publish")).as("one directed notice").isEqualTo(1);
        // The release and the woken waiter's attempt; the others still sleep out their >= 5 s step.
        assertThat(CommandStats.calls(redis, "evalsha") + CommandStats.calls(redis, "eval"))
                .as("scripts run after the release").isEqualTo(2);
        assertThat(redis.call("ZCARD", "lock:{a}:sleepers")).as("the others stay registered")
                .isEqualTo(String.valueOf(INSTANCES - 1));
        assertThat(entered).as("the waiter that started first is woken first").containsExactly(0);

        bodies.forEach(Sinks.Empty::tryEmitEmpty); // each winner in turn; the others wake one by one
        for (CompletableFuture<Void> w : waiters) {
            w.get(30, TimeUnit.SECONDS);
        }
        assertThat(redis.call("EXISTS", "lock:{a}", "lock:{a}:sleepers")).as("nothing left").isEqualTo("0");
    }

    /**
     * A release that Redis runs right after the script that registered a waiter publishes the
     * waiter's token while the script's reply is still on its way, so the reply and the notice
     * reach the waiter's process together. The waiter must hear that notice, not sleep out its
     * backoff step (30 to 60 s here). Redis queues both commands during a {@code CLIENT PAUSE}
     * and runs them back to back once it ends; the race is the client's, so ten rounds. The
     * waiter is a lock whose body sees the lease (its first attempt is the script), or a
     * multi-lock on the name and another one.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"lock", "multi-lock"})
    void aNoticePublishedRightAfterTheScriptThatRegisteredTheWaiterWakesIt(String primitive) throws Exception {
        LockOptions slow = LockOptions.builder().backoff(Duration.ofMillis(1), Duration.ofMinutes(1))
                .acquireTimeout(Duration.ofMinutes(5)).build();
        ReactiveRedisLock holding = instance(slow);
        ReactiveRedisLock waiting = instance(slow);
        IntFunction<Mono<Integer>> acquire = primitive.equals("lock")
                ? round -> waiting.withLock("a", TTL, lease -> Mono.just(round))
                : round -> waiting.multiLock().withLocks(List.of("a", "b"), TTL, Mono.just(round));
        for (int round = 0; round <= 10; round++) {
            Sinks.Empty<Void> holderDone = Sinks.empty();
            CompletableFuture<Void> holder = holding.withLock("a", TTL, holderDone.asMono()).toFuture();
            await().until(() -> "1".equals(redis.call("EXISTS", "lock:{a}")));
            if (round == 0) {
                // The waiting process waits once with nothing paused, so it listens on the lock's channel
                // (for the linger of a minute) and Redis has the scripts.
                CompletableFuture<Integer> first = acquire.apply(round).toFuture();
                await().until(() -> waiting.localWaiters("a") == 1 && RedisInternals.releaseListeners(redis, "lock:{a}") == 1);
                holderDone.tryEmitEmpty();
                assertThat(first.get(10, TimeUnit.SECONDS)).isEqualTo(round);
                holder.get(10, TimeUnit.SECONDS);
                continue;
            }
            redis.call("CLIENT", "PAUSE", "60000", "WRITE");
            try {
                CompletableFuture<Integer> waiter = acquire.apply(round).toFuture(); // its script will find "a" busy
                await().until(() -> pausedClients() == 1);
                holderDone.tryEmitEmpty(); // the holder's release queues behind the waiter's script
                await().until(() -> pausedClients() == 2);
                redis.call("CLIENT", "UNPAUSE");
                assertThat(waiter.get(10, TimeUnit.SECONDS)).as("round %d: woken by the notice", round).isEqualTo(round);
                holder.get(10, TimeUnit.SECONDS);
            } finally {
                redis.call("CLIENT", "UNPAUSE");
            }
        }
    }

    /** Clients whose command waits for a {@code CLIENT PAUSE} to end. */
    private long pausedClients() {
        return redis.call("INFO", "clients").lines().filter(l -> l.startsWith("blocked_clients:"))
                .mapToLong(l -> Long.parseLong(l.substring(l.indexOf(':') + 1).strip())).sum();
    }

    /**
     * Each waiting instance listens on a channel of its own, the lock's channel followed by the
     * instance's address, which its tokens end with; a release publishes the sleeper's token
     * there, so Redis writes the notice to one connection however many instances wait.
     */
    @Test
    void aReleaseNoticeGoesToTheSleepersInstanceAlone() throws Exception {
        Sinks.Empty<Void> holderDone = Sinks.empty();
        CompletableFuture<Void> holder = instance().withLock("a", TTL, holderDone.asMono()).toFuture();
        await().until(() -> "1".equals(redis.call("EXISTS", "lock:{a}")));
        List<String> tokens = new CopyOnWriteArrayList<>();
        for (int i = 0; i < INSTANCES; i++) {
            ReactiveRedisLock lock = instance();
            lock.withLock("a", TTL, lease -> Mono.fromRunnable(() -> tokens.add(lease.token())).then(Mono.never())).subscribe();
            await().until(() -> lock.localWaiters("a") == 1);
        }
        await().until(() -> RedisInternals.releaseListeners(redis, "lock:{a}") == INSTANCES);
        assertThat(redis.callList("PUBSUB", "CHANNELS", "lock:{a}:released*")).as("a channel per instance").hasSize(INSTANCES);
        RedisClient probeClient = RedisClient.create(redis.uri());
        try (StatefulRedisPubSubConnection<String, String> probe = probeClient.connectPubSub(StringCodec.UTF8)) {
            List<String> heard = new CopyOnWriteArrayList<>();
            probe.addListener(new RedisPubSubAdapter<>() {
                @Override
                public void message(String pattern, String channel, String message) {
                    heard.add(channel + " " + message);
                }
            });
            probe.sync().psubscribe("lock:{a}:released*");

            holderDone.tryEmitEmpty();
            holder.get(10, TimeUnit.SECONDS);
            await().until(() -> tokens.size() == 1 && heard.size() == 1);
            String token = tokens.get(0);
            String channel = "lock:{a}:released" + token.substring(32);
            assertThat(heard).as("the woken waiter's token, on its instance's channel").containsExactly(channel + " " + token);
            assertThat(redis.callList("PUBSUB", "NUMSUB", channel)).as("one connection listens there").containsExactly(channel, 1L);
        } finally {
            probeClient.shutdown();
        }
    }

    /**
     * A process whose release kept the lock for a sleeper, and that asks for it again at once (a
     * worker in a loop), sends the script that registers it, not first a {@code SET} that would
     * find the lock kept: one round trip less per hand-off between processes.
     */
    @Test
    void aProcessWhoseReleaseKeptTheLockForASleeperAsksAgainWithTheScriptAlone() throws Exception {
        ReactiveRedisLock lock = instance();
        redis.call("SET", "lock:{x}", "outsider", "PX", "60000");
        Sinks.Empty<Void> firstBody = Sinks.empty();
        CompletableFuture<Void> first = lock.withLock("x", TTL, firstBody.asMono()).toFuture();
        await().until(() -> lock.localWaiters("x") == 1 && RedisInternals.releaseListeners(redis, "lock:{x}") == 1);
        release("x", "outsider"); // kept for this process's sleeper, which claims it
        await().until(() -> lock.localWaiters("x") == 0 && redis.call("GET", "lock:{x}").endsWith("+"));
        redis.call("ZADD", "lock:{x}:sleepers", "1", "a-sleeper-elsewhere");
        firstBody.tryEmitEmpty();
        first.get(10, TimeUnit.SECONDS);
        assertThat(redis.call("GET", "lock:{x}")).as("kept for the other sleeper").isEqualTo("~a-sleeper-elsewhere");

        redis.call("CONFIG", "RESETSTAT");
        Disposable again = lock.withLock("x", TTL, Mono.empty()).subscribe();
        try {
            await().until(() -> redis.callList("ZRANGE", "lock:{x}:sleepers", "0", "-1").size() == 1);
            assertThat(CommandStats.calls(redis, "evalsha") + CommandStats.calls(redis, "eval")).as("one script").isEqualTo(1);
            assertThat(CommandStats.calls(redis, "set")).as("the script's SET NX only, no plain SET before it").isEqualTo(1);
        } finally {
            again.dispose();
        }
    }

    /** A sleeper's token without an address (a client of an earlier version waits) is published on the lock's channel itself. */
    @Test
    void aSleeperWithoutAnAddressIsNotifiedOnTheLocksChannel() {
        RedisClient probeClient = RedisClient.create(redis.uri());
        try (StatefulRedisPubSubConnection<String, String> probe = probeClient.connectPubSub(StringCodec.UTF8)) {
            List<String> heard = new CopyOnWriteArrayList<>();
            probe.addListener(new RedisPubSubAdapter<>() {
                @Override
                public void message(String channel, String message) {
                    heard.add(channel + " " + message);
                }
            });
            probe.sync().subscribe("lock:{a}:released");
            String older = "0123456789abcdef".repeat(2);
            redis.call("SET", "lock:{a}", "holder+", "PX", "60000");
            redis.call("ZADD", "lock:{a}:sleepers", "1", older);

            assertThat(release("a", "holder")).as("kept for the sleeper").isEqualTo("2");
            await().until(() -> heard.size() == 1);
            assertThat(heard).containsExactly("lock:{a}:released " + older);
        } finally {
            probeClient.shutdown();
        }
    }

    @Test
    void aReleaseWithNobodyWaitingPublishesNothing() {
        ReactiveRedisLock lock = instance();
        redis.call("CONFIG", "RESETSTAT");
        assertThat(lock.withLock("a", TTL, Mono.just(1)).block(Duration.ofSeconds(10))).isEqualTo(1);
        assertThat(CommandStats.calls(redis, "publish")).isZero();
    }

    /**
     * Within one process only the waiter that has waited longest keeps trying at the backoff step
     * (50 ms here); the others wait to be woken and call only at the follower step (five waiter
     * leases without fairness, half of one with it: 5 s and 500 ms here). Counted by the attempts
     * each waiter made before giving up at its 2 s acquire timeout.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "fair={0}")
    @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
    void onlyTheFirstLocalWaiterKeepsTryingTheOthersWaitToBeWoken(boolean fair) {
        Sinks.Empty<Void> holderDone = Sinks.empty();
        instance().withLock("a", TTL, holderDone.asMono()).subscribe();
        await().until(() -> "1".equals(redis.call("EXISTS", "lock:{a}")));
        ReactiveRedisLock client = instance(LockOptions.builder()
                .backoff(Duration.ofMillis(50), Duration.ofMillis(50)).acquireTimeout(Duration.ofSeconds(2)).build());
        ReactiveLock here = fair ? client.fair() : client;
        // Each waiter's attempts, and when it gave up (all do, after their 2 s acquire timeout).
        record Outcome(int attempts, long endedAt) {}
        List<CompletableFuture<Outcome>> outcomes = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            outcomes.add(here.withLock("a", TTL, Mono.<Outcome>empty())
                    .onErrorResume(LockAcquisitionException.class, e -> Mono.just(new Outcome(e.attempts(), System.nanoTime())))
                    .toFuture());
        }
        List<Outcome> ended = outcomes.stream().map(CompletableFuture::join)
                .sorted(Comparator.comparingInt(Outcome::attempts)).toList();
        holderDone.tryEmitEmpty();

        Outcome first = ended.get(ended.size() - 1);
        assertThat(first.attempts()).as("the first waiter polled for the whole 2 s").isGreaterThanOrEqualTo(10);
        // One attempt on arrival, one more if that was sent before Redis confirmed the subscription
        // (the notice for its registration could have been missed), the follower steps, and one
        // when the first gave up and woke the next. The one woken is then the first and polls at
        // the 50 ms step until its own deadline: on a busy machine the ten start (and so time out)
        // tens of milliseconds apart, so each may also have one attempt per 50 ms it outlived the
        // first by, and one for the step under way. A follower that polled would have about 40.
        int followerAttempts = fair ? 7 : 4;
        assertThat(ended.subList(0, ended.size() - 1)).as("attempts of each of the other waiters")
                .allSatisfy(o -> assertThat(o.attempts()).isLessThanOrEqualTo(followerAttempts
                        + 1 + (int) (Math.max(0, o.endedAt() - first.endedAt()) / Duration.ofMillis(50).toNanos())));
    }
}
