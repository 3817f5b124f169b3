package io.reactivelock.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLease;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.redis.RedisInternals;
import io.reactivelock.spi.Tokens;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/**
 * Only the holder of a lock's token can release or extend it: knowing the name is not enough,
 * neither through the API nor by running the lock's scripts directly.
 */
@WithRedis
class OwnershipTest {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final String KEY = "lock:{a}";

    private RedisServer redis;
    private final List<ReactiveRedisLock> locks = new ArrayList<>();
    private final List<Disposable> subscriptions = new ArrayList<>();

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
    }

    @AfterEach
    void tearDown() {
        subscriptions.forEach(Disposable::dispose);
        locks.forEach(ReactiveRedisLock::close);
    }

    private ReactiveRedisLock lock(LockOptions options) {
        ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), options);
        locks.add(lock);
        return lock;
    }

    /** Holds lock "a" until the returned sink completes; {@code lease} receives the lease. */
    private Sinks.Empty<Void> hold(AtomicReference<LockLease> lease, boolean fair) {
        Sinks.Empty<Void> release = Sinks.empty();
        ReactiveRedisLock client = lock(LockOptions.defaults());
        ReactiveLock lock = fair ? client.fair() : client;
        subscriptions.add(lock.withLock("a", TTL, held -> {
            lease.set(held);
            return release.asMono();
        }).subscribe());
        await().pollInterval(Duration.ofMillis(10)).until(() -> lease.get() != null);
        return release;
    }

    private String evalsha(RedisInternals.Script script, int keys, String... keysAndArgs) {
        String sha = redis.call("SCRIPT", "LOAD", script.source());
        List<String> command = new ArrayList<>(List.of("EVALSHA", sha, Integer.toString(keys)));
        command.addAll(Arrays.asList(keysAndArgs));
        return redis.call(command.toArray(String[]::new));
    }

    @Test
    void theLockValueIsTheHoldersOpaqueTokenOf128RandomBits() {
        AtomicReference<LockLease> lease = new AtomicReference<>();
        hold(lease, false);
        // 128 random bits, then the address of the client's release notices.
        assertThat(redis.call("GET", KEY)).isEqualTo(lease.get().token()).matches("[0-9a-f]{32}:[0-9a-f]{8}");
        // Drawn on four threads at once, each with bytes of its own drawn ahead.
        Set<String> tokens = ConcurrentHashMap.newKeySet();
        Flux.range(0, 100_000).parallel(4).runOn(Schedulers.parallel()).doOnNext(i -> tokens.add(Tokens.next()))
                .sequential().blockLast();
        assertThat(tokens).hasSize(100_000).allMatch(t -> t.matches("[0-9a-f]{32}"));
    }

    @Test
    void anotherClientThatKnowsTheNameCannotReleaseTheLockThroughTheApi() {
        AtomicReference<LockLease> lease = new AtomicReference<>();
        Sinks.Empty<Void> holder = hold(lease, false);
        try (ReactiveRedisLock other = ReactiveRedisLock.create(redis.uri(),
                LockOptions.builder().acquireTimeout(Duration.ZERO).build())) {
            StepVerifier.create(other.withLock("a", TTL, Mono.just("never")))
                    .expectError(LockAcquisitionException.class)
                    .verify(Duration.ofSeconds(20));
            // The other's failed attempt sent a release for its own token on its command connection;
            // its inspector, on that same connection, reads after Redis has run that release.
            assertThat(other.inspector().inspect("a").block(Duration.ofSeconds(20)).holder())
                    .isEqualTo(lease.get().token().substring(0, 8));
        }
        assertThat(redis.call("GET", KEY)).as("still the holder's, with the sleepers mark the other's attempts set")
                .isEqualTo(lease.get().token() + "+");
        holder.tryEmitEmpty();
        await().pollInterval(Duration.ofMillis(10)).until(() -> "0".equals(redis.call("EXISTS", KEY)));
    }

    @Test
    void theReleaseAndRenewScriptsDoNothingWithoutTheToken() {
        AtomicReference<LockLease> lease = new AtomicReference<>();
        hold(lease, false);
        String guess = Tokens.next();
        assertThat(evalsha(RedisInternals.RELEASE, 1, KEY, guess, KEY + ":released")).isEqualTo("0");
        assertThat(evalsha(RedisInternals.RENEW, 1, KEY, guess, "86400000")).isEqualTo("0");
        assertThat(evalsha(RedisInternals.RELEASE, 1, KEY, "", KEY + ":released")).isEqualTo("0");
        assertThat(redis.call("GET", KEY)).isEqualTo(lease.get().token());
        assertThat(Long.parseLong(redis.call("PTTL", KEY))).as("not extended").isBetween(1L, TTL.toMillis());
    }

    @Test
    void theFairReleaseScriptDoesNothingWithoutTheToken() {
        AtomicReference<LockLease> lease = new AtomicReference<>();
        hold(lease, true);
        assertThat(evalsha(RedisInternals.RELEASE_FAIR, 4, KEY, KEY + ":fence", KEY + ":queue", KEY + ":waiters",
                Tokens.next(), KEY + ":released", "60000", "1000")).isEqualTo("0");
        assertThat(redis.call("GET", KEY)).isEqualTo(lease.get().token());
    }

    @Test
    void theOnlyPublicOperationsThatTakeALockNameAreWithLockAndWithLockMany() {
        for (Class<?> type : List.of(ReactiveLock.class, ReactiveRedisLock.class, LockLease.class)) {
            for (Method method : type.getMethods()) {
                boolean takesAString = Arrays.asList(method.getParameterTypes()).contains(String.class);
                if (takesAString && Modifier.isPublic(method.getModifiers())
                        && method.getDeclaringClass() != Object.class) {
                    assertThat(method.getName()).as(method.toString()).isIn("withLock", "withLockMany");
                }
            }
        }
        assertThat(LockLease.class.getMethods()).extracting(Method::getName)
                .doesNotContain("release", "unlock", "extend", "renew", "extendTo");
    }
}
