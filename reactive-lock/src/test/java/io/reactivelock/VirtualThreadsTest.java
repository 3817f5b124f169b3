package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledForJreRange;
import org.junit.jupiter.api.condition.JRE;
import reactor.blockhound.BlockingOperationError;
import reactor.core.Exceptions;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The lock where a JDK 21+ application puts its blocking work: callers that block for the lock's
 * result on virtual threads of their own, and bodies that block (here: a socket round trip to Redis
 * through the test harness) on {@link Schedulers#boundedElastic()} backed by virtual threads, with
 * BlockHound on. Runs in a JVM started with {@code -D}{@value #ON_VIRTUAL_THREADS}{@code =true}, as
 * the build's run of the core tier on JDK 25 is; skipped, with the reason, on JDK 17 and where the
 * property is not set (Reactor reads it once, when {@link Schedulers} is first used).
 */
@WithRedis
@EnabledForJreRange(min = JRE.JAVA_21, disabledReason = "virtual threads need JDK 21 or later; the build runs this in its JDK 25 run")
class VirtualThreadsTest {

    static final String ON_VIRTUAL_THREADS = "reactor.schedulers.defaultBoundedElasticOnVirtualThreads";
    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int CALLERS = 64;

    private static MethodHandle isVirtual;

    private RedisServer redis;
    private ReactiveRedisLock lock;

    @BeforeAll
    static void boundedElasticRunsOnVirtualThreads() throws ReflectiveOperationException {
        assumeTrue(Boolean.getBoolean(ON_VIRTUAL_THREADS), () -> "this JVM was started without -D" + ON_VIRTUAL_THREADS
                + "=true, so Schedulers.boundedElastic() runs on platform threads (the build's JDK 25 run sets it)");
        // Thread.isVirtual() is JDK 21 API; this module compiles for 17.
        isVirtual = MethodHandles.publicLookup().findVirtual(Thread.class, "isVirtual", MethodType.methodType(boolean.class));
        assertThat(Mono.fromCallable(VirtualThreadsTest::onVirtualThread).subscribeOn(Schedulers.boundedElastic()).block(WAIT))
                .as("boundedElastic() runs its tasks on virtual threads").isTrue();
    }

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
        lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder().acquireTimeout(WAIT).build());
    }

    @AfterEach
    void tearDown() {
        lock.close();
    }

    private static boolean onVirtualThread() {
        try {
            return (boolean) isVirtual.invoke(Thread.currentThread());
        } catch (Throwable e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Each caller blocks its own virtual thread on {@code withLock(...).block()}; each body reads a Redis
     * counter and writes it back plus one with blocking socket calls on a bounded-elastic virtual thread.
     * An update is lost if two bodies ever overlap.
     */
    @Test
    void blockingCallersAndBlockingBodiesOnVirtualThreadsTakeTurnsAndLoseNoUpdate() throws Exception {
        Set<String> callerThreads = ConcurrentHashMap.newKeySet();
        Set<String> bodyThreads = ConcurrentHashMap.newKeySet();
        AtomicInteger notVirtual = new AtomicInteger();
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger mostInside = new AtomicInteger();
        redis.call("SET", "counter", "0");

        ExecutorService callers = (ExecutorService) Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
        List<Future<Long>> results = new ArrayList<>();
        try {
            for (int i = 0; i < CALLERS; i++) {
                results.add(callers.submit(() -> {
                    callerThreads.add(Thread.currentThread().toString());
                    if (!onVirtualThread()) {
                        notVirtual.incrementAndGet();
                    }
                    return lock.withLock("counter", TTL, lease -> Mono.fromCallable(() -> {
                        bodyThreads.add(Thread.currentThread().toString());
                        if (!onVirtualThread()) {
                            notVirtual.incrementAndGet();
                        }
                        mostInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
                        long read = Long.parseLong(redis.call("GET", "counter"));
                        redis.call("SET", "counter", Long.toString(read + 1));
                        inside.decrementAndGet();
                        return lease.fencingToken();
                    }).subscribeOn(Schedulers.boundedElastic())).block(WAIT);
                }));
            }
            List<Long> fences = new ArrayList<>();
            for (Future<Long> result : results) {
                fences.add(result.get());
            }
            assertThat(fences).as("one fencing token per body").doesNotHaveDuplicates().hasSize(CALLERS);
        } finally {
            callers.shutdownNow();
        }

        assertThat(redis.call("GET", "counter")).as("lost updates").isEqualTo(Integer.toString(CALLERS));
        assertThat(mostInside).as("bodies inside at once").hasValue(1);
        assertThat(notVirtual).as("callers and bodies not on a virtual thread").hasValue(0);
        assertThat(callerThreads).hasSize(CALLERS);
        assertThat(bodyThreads).isNotEmpty();
    }

    /**
     * Virtual threads make no thread exempt: a body that blocks on one of Reactor's non-blocking threads
     * (here {@code parallel()}, where a careless {@code publishOn} puts it) instead of on
     * {@code boundedElastic()} is still reported, fails the call, and the lock is released.
     */
    @Test
    void aBodyThatBlocksOnANonBlockingThreadIsStillReportedAndTheLockReleased() {
        Mono<String> blocksInPlace = lock.withLock("in-place", TTL, lease -> Mono.fromCallable(() -> redis.call("PING"))
                .subscribeOn(Schedulers.parallel()));
        Throwable error = null;
        try {
            blocksInPlace.block(WAIT);
        } catch (RuntimeException e) {
            error = Exceptions.unwrap(e);
        }
        assertThat(error).as("what the caller gets").isInstanceOf(BlockingOperationError.class);
        assertThat(redis.call("EXISTS", "lock:{in-place}")).as("the lock is released").isEqualTo("0");
    }
}
