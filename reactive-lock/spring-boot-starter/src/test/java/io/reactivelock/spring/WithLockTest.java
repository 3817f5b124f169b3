package io.reactivelock.spring;

import static io.reactivelock.support.CounterWorkload.BODIES;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.reactive.RedisReactiveCommands;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.ReentrantReactiveLock;
import io.reactivelock.spring.WithLock.OnBusy;
import io.reactivelock.support.CounterWorkload;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.aop.support.AopUtils;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

/**
 * {@link WithLock} on beans of an application context whose lock is the auto-configured one, on a
 * real Redis: names from the arguments, {@code Mono} and {@code Flux} methods, busy locks, and
 * what the start-up refuses.
 */
@WithRedis
class WithLockTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final Duration TTL = Duration.ofSeconds(10);

    private RedisServer redis;
    private RedisClient client;
    private StatefulRedisConnection<String, String> connection;
    private CounterWorkload workload;

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
        client = RedisClient.create(redis.uri());
        connection = client.connect(StringCodec.UTF8);
        workload = new CounterWorkload(connection.reactive());
    }

    @AfterEach
    void tearDown() {
        connection.close();
        client.shutdown();
    }

    /** The auto-configured lock on the test's Redis, with the annotations. */
    private ApplicationContextRunner bare() {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(ReactiveLockAutoConfiguration.class, ReactiveLockAnnotationAutoConfiguration.class))
                .withPropertyValues("spring.data.redis.url=redis://" + redis.host() + ":" + redis.port());
    }

    /** {@link #bare()} with the beans {@link Orders} and {@link Feeds}. */
    private ApplicationContextRunner runner() {
        return bare().withPropertyValues("orders.ttl=7s")
                .withBean(Orders.class, () -> new Orders(workload, connection.reactive()))
                .withBean(Feeds.class, () -> new Feeds(connection.reactive()));
    }

    private boolean held(String name) {
        return redis.call("EXISTS", "lock:{" + name + "}").equals("1");
    }

    /** Holds {@code name} through the application's lock until the returned sink completes. */
    private Sinks.Empty<Void> hold(ReactiveLock lock, String name) {
        Sinks.Empty<Void> release = Sinks.empty();
        lock.withLock(name, TTL, release.asMono()).subscribe();
        await().until(() -> held(name));
        return release;
    }

    @Test
    void callsWithTheSameArgumentTakeTheSameLockOneAtATime() {
        runner().run(context -> {
            Orders orders = context.getBean(Orders.class);

            workload.run(body -> orders.pay(new Order("7", null))).block(TIMEOUT);

            assertThat(orders.calls()).isEqualTo(BODIES);
            assertThat(workload.counter()).as("lost updates").isEqualTo(BODIES);
            assertThat(workload.maxOccupancy()).as("bodies inside at once").isEqualTo(1);
            assertThat(orders.lockedWhilePaying()).as("the name '" + "order:' + #order.id gave").containsExactly("7");
        });
    }

    @Test
    void callsWithDifferentArgumentsTakeDifferentLocksAndOverlap() {
        runner().run(context -> {
            Orders orders = context.getBean(Orders.class);
            AtomicInteger order = new AtomicInteger();

            workload.run(body -> orders.pay(new Order("o" + order.incrementAndGet(), null))).block(TIMEOUT);

            assertThat(workload.sawRace(BODIES)).as("negative control: 32 names, 32 locks, bodies overlap").isTrue();
            assertThat(orders.lockedWhilePaying()).as("each call held its own order's lock")
                    .hasSize(BODIES).contains("o1", "o" + BODIES);
        });
    }

    @Test
    void argumentsAreNamedByPositionTooAndTheNameIsTheirTextWithThePlaceholderTtl() {
        runner().run(context -> StepVerifier.create(context.getBean(Orders.class).touch("eu", 7))
                .assertNext(pttl -> assertThat(pttl).as("PTTL of lock:{eu:7} inside the body: ttl ${orders.ttl} = 7s")
                        .isPositive().isLessThanOrEqualTo(7000))
                .expectComplete()
                .verify(TIMEOUT));
    }

    @Test
    void aNameThatFailsOrIsNullThrowsAtTheCallWithoutCallingTheMethod() {
        runner().run(context -> {
            Orders orders = context.getBean(Orders.class);

            assertThatThrownBy(() -> orders.byNote(new Order("7", null)))
                    .isInstanceOfSatisfying(LockNameEvaluationException.class, e -> {
                        assertThat(e.expression()).isEqualTo("'order:' + #order.note.trim()");
                        assertThat(e.method()).isEqualTo(Orders.class.getName() + ".byNote(Order)");
                    })
                    .hasMessageContaining("failed");
            assertThatThrownBy(() -> orders.byNullNote(new Order("7", null)))
                    .isInstanceOf(LockNameEvaluationException.class)
                    .hasMessage("@WithLock name '#order.note' of " + Orders.class.getName() + ".byNullNote(Order) gave null");
            assertThat(orders.calls()).isZero();
        });
    }

    @Test
    void aMethodReturningNeitherMonoNorFluxFailsTheStartNamingIt() {
        bare().withBean(BlockingJob.class).run(context -> assertThat(context).hasFailed()
                .getFailure().rootCause().isInstanceOf(IllegalStateException.class)
                .hasMessage("@WithLock method " + BlockingJob.class.getName() + ".total(String) returns java.lang.String: only a"
                        + " method returning Mono or Flux, or a Kotlin suspend function, can wait for a lock without blocking"));
    }

    @Test
    void aNameThatIsNoExpressionADurationThatIsNoneOrATtlTheLockRefusesFailsTheStartNamingTheMethod() {
        bare().withBean(BadName.class).run(context -> assertThat(context).hasFailed()
                .getFailure().rootCause().hasMessageStartingWith("@WithLock name ''order:' + ' of " + BadName.class.getName()
                        + ".run() is not a SpEL expression"));
        bare().withBean(BadTtl.class).run(context -> assertThat(context).hasFailed()
                .getFailure().rootCause().hasMessageStartingWith("@WithLock ttl '${no.such.property}' of " + BadTtl.class.getName()
                        + ".run() is not a duration"));
        bare().withBean(Inner.class).withPropertyValues("reactive-lock.max-lease-time=5s").run(context -> assertThat(context).hasFailed()
                .getFailure().hasStackTraceContaining("@WithLock ttl '10s' of " + Inner.class.getName()
                        + ".run(String) is refused by the lock: ttl (PT10S) must not exceed maxLeaseTime (PT5S)"));
    }

    @Test
    void aMonoMethodIsCalledAtEachSubscriptionWhileTheLockIsHeldAndReleasedBeforeItsValue() {
        runner().run(context -> {
            Feeds feeds = context.getBean(Feeds.class);
            Mono<Long> heldInside = feeds.heldInside("news");
            assertThat(feeds.calls()).as("not before subscription").isZero();

            for (int subscription = 1; subscription <= 2; subscription++) {
                StepVerifier.create(heldInside)
                        .assertNext(exists -> assertThat(exists).as("lock:{feed:news} exists while the method runs").isEqualTo(1))
                        .then(() -> assertThat(held("feed:news")).as("released before the value arrives").isFalse())
                        .expectComplete()
                        .verify(TIMEOUT);
                assertThat(feeds.calls()).isEqualTo(subscription);
            }
        });
    }

    @Test
    void aMethodThatThrowsOrReturnsNullFailsTheCallAndReleases() {
        runner().run(context -> {
            Feeds feeds = context.getBean(Feeds.class);
            feeds.returnMono(null);
            StepVerifier.create(feeds.refresh("news"))
                    .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(NullPointerException.class)
                            .hasMessage("@WithLock method " + Feeds.class.getName() + ".refresh(String) returned null"))
                    .verify(TIMEOUT);
            StepVerifier.create(feeds.failing("news"))
                    .expectErrorMessage("thrown by the method")
                    .verify(TIMEOUT);
            assertThat(held("feed:news")).isFalse();
        });
    }

    @Test
    void aFluxHoldsTheLockUntilItCompletesAndIsReleasedBeforeTheCompletionArrives() {
        runner().run(context -> {
            Feeds feeds = context.getBean(Feeds.class);
            Sinks.Many<Integer> items = Sinks.many().unicast().onBackpressureBuffer();
            feeds.returnFlux(items.asFlux());

            StepVerifier.create(feeds.read("news"))
                    .then(() -> items.tryEmitNext(1))
                    .expectNext(1)
                    .then(() -> assertThat(held("feed:news")).as("held after the first item").isTrue())
                    .then(() -> items.tryEmitNext(2))
                    .expectNext(2)
                    .then(() -> assertThat(held("feed:news")).as("held until the Flux terminates").isTrue())
                    .then(items::tryEmitComplete)
                    .expectComplete()
                    .verify(TIMEOUT);

            assertThat(held("feed:news")).as("released before the completion arrived").isFalse();
        });
    }

    @Test
    void aCancelledFluxIsCancelledAndItsLockReleasedAtOnce() {
        runner().run(context -> {
            Feeds feeds = context.getBean(Feeds.class);
            AtomicBoolean cancelled = new AtomicBoolean();
            feeds.returnFlux(Flux.<Integer>never().startWith(1).doOnCancel(() -> cancelled.set(true)));

            StepVerifier.create(feeds.read("news"))
                    .expectNext(1)
                    .then(() -> assertThat(held("feed:news")).isTrue())
                    .thenCancel()
                    .verify(TIMEOUT);

            assertThat(cancelled).as("the method's Flux saw the cancel").isTrue();
            // Within 5 s, well below the 10 s TTL: released, not expired.
            await().atMost(Duration.ofSeconds(5)).until(() -> !held("feed:news"));
        });
    }

    @Test
    void aLostLeaseCancelsTheFluxAndFailsItWithLockLostException() {
        runner().run(context -> {
            Feeds feeds = context.getBean(Feeds.class);
            AtomicBoolean cancelled = new AtomicBoolean();
            feeds.returnFlux(Flux.<Integer>never().startWith(1).doOnCancel(() -> cancelled.set(true)));

            StepVerifier.create(feeds.readOnShortLease("news"))
                    .expectNext(1)
                    .then(() -> redis.call("DEL", "lock:{feed:news}"))
                    .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(LockLostException.class).hasMessageContaining("feed:news"))
                    .verify(TIMEOUT);

            assertThat(cancelled).as("the method's Flux was cancelled").isTrue();
        });
    }

    @Test
    void aBusyLockFailsTheCallWithLockAcquisitionExceptionWithoutCallingTheMethod() {
        runner().run(context -> {
            Feeds feeds = context.getBean(Feeds.class);
            Sinks.Empty<Void> release = hold(context.getBean(ReactiveLock.class), "feed:news");

            StepVerifier.create(feeds.refresh("news"))
                    .expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(LockAcquisitionException.class, failed -> {
                        assertThat(failed.reason()).isEqualTo(LockAcquisitionException.Reason.BUSY);
                        assertThat(failed.lockName()).isEqualTo("feed:news");
                    }))
                    .verify(TIMEOUT);

            assertThat(feeds.calls()).isZero();
            release.tryEmitEmpty();
        });
    }

    @Test
    void onBusySkipCompletesEmptyWithoutCallingTheMethod() {
        runner().run(context -> {
            Feeds feeds = context.getBean(Feeds.class);
            feeds.returnMono(Mono.just("refreshed"));
            feeds.returnFlux(Flux.just(1, 2));
            Sinks.Empty<Void> release = hold(context.getBean(ReactiveLock.class), "feed:news");

            StepVerifier.create(feeds.refreshIfFree("news")).expectComplete().verify(TIMEOUT);
            StepVerifier.create(feeds.readIfFree("news")).expectComplete().verify(TIMEOUT);
            assertThat(feeds.calls()).as("skipped, not called").isZero();

            release.tryEmitEmpty();
            await().until(() -> !held("feed:news"));
            StepVerifier.create(feeds.refreshIfFree("news")).expectNext("refreshed").expectComplete().verify(TIMEOUT);
            StepVerifier.create(feeds.readIfFree("news")).expectNext(1, 2).expectComplete().verify(TIMEOUT);
            assertThat(feeds.calls()).isEqualTo(2);
        });
    }

    @Test
    void onBusySkipStillFailsTheCallWhenRedisCannotBeReached() {
        runner().run(context -> {
            Feeds feeds = context.getBean(Feeds.class);
            feeds.returnMono(Mono.just("refreshed"));
            feeds.returnFlux(Flux.just(1, 2));
            redis.stop();

            // Not busy, unknown: skipping would read as "another instance has it" when none may.
            StepVerifier.create(feeds.refreshIfFree("news")).expectErrorSatisfies(e -> assertThat(e)
                    .isInstanceOf(LockAcquisitionException.class).extracting(x -> ((LockAcquisitionException) x).reason())
                    .isEqualTo(LockAcquisitionException.Reason.REDIS_UNAVAILABLE)).verify(TIMEOUT);
            StepVerifier.create(feeds.readIfFree("news")).expectErrorSatisfies(e -> assertThat(e)
                    .isInstanceOf(LockAcquisitionException.class).extracting(x -> ((LockAcquisitionException) x).reason())
                    .isEqualTo(LockAcquisitionException.Reason.REDIS_UNAVAILABLE)).verify(TIMEOUT);
            assertThat(feeds.calls()).as("not called").isZero();
        });
    }

    @Test
    void onBusySkipDoesNotSwallowABusyLockOfTheMethodItself() {
        runner().run(context -> {
            Feeds feeds = context.getBean(Feeds.class);
            ReactiveLock lock = context.getBean(ReactiveLock.class);
            Sinks.Empty<Void> release = hold(lock, "other");
            feeds.returnMono(lock.withAcquireTimeout(Duration.ZERO).withLock("other", TTL, Mono.just("inside")));

            StepVerifier.create(feeds.refreshIfFree("news"))
                    .expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(LockAcquisitionException.class,
                            failed -> assertThat(failed.lockName()).isEqualTo("other")))
                    .verify(TIMEOUT);

            assertThat(feeds.calls()).isEqualTo(1);
            release.tryEmitEmpty();
        });
    }

    @Test
    void aNestedCallForTheHeldNameJoinsItWhenTheLockIsReentrant() {
        runner().withUserConfiguration(Nested.class).withBean(ReactiveLock.class, () -> ReentrantReactiveLock.of(
                ReactiveRedisLock.create(redis.uri(), LockOptions.defaults()))).run(context -> {
                    Outer outer = context.getBean(Outer.class);
                    StepVerifier.create(outer.mono("job")).expectNext("inner").expectComplete().verify(TIMEOUT);
                    StepVerifier.create(outer.flux("job")).expectNext("inner").expectComplete().verify(TIMEOUT);
                    assertThat(held("job")).isFalse();
                });
    }

    @Test
    void aNestedCallForTheHeldNameWaitsForItWhenTheLockIsNotReentrant() {
        runner().withUserConfiguration(Nested.class).run(context -> {
            Outer outer = context.getBean(Outer.class);
            StepVerifier.create(outer.mono("job")).expectError(LockAcquisitionException.class).verify(TIMEOUT);
            StepVerifier.create(outer.flux("job")).expectError(LockAcquisitionException.class).verify(TIMEOUT);
        });
    }

    @Test
    void switchedOffByThePropertyTheMethodsRunUnlockedAndUnchecked() {
        runner().withBean(BlockingJob.class).withPropertyValues("reactive-lock.annotations.enabled=false").run(context -> {
            assertThat(context).hasNotFailed();
            Feeds feeds = context.getBean(Feeds.class);
            assertThat(AopUtils.isAopProxy(feeds)).isFalse();
            feeds.returnMono(Mono.just("unlocked"));
            Sinks.Empty<Void> release = hold(context.getBean(ReactiveLock.class), "feed:news");
            StepVerifier.create(feeds.refresh("news")).expectNext("unlocked").expectComplete().verify(TIMEOUT);
            release.tryEmitEmpty();
        });
    }

    @Test
    void withoutAReactiveLockBeanTheStartFailsNamingTheMethod() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(ReactiveLockAnnotationAutoConfiguration.class))
                .withBean(Inner.class)
                .run(context -> assertThat(context).hasFailed().getFailure().rootCause()
                        .hasMessage("@WithLock method " + Inner.class.getName() + ".run(String) needs a ReactiveLock bean, and the"
                                + " application context has none"));
    }

    /** An order; {@code note} may be null. */
    public record Order(String id, @Nullable String note) {}

    /** A bean with locked methods; it is proxied, so the test reaches its state through methods only. */
    public static class Orders {
        private final AtomicInteger calls = new AtomicInteger();
        private final Set<String> lockedWhilePaying = ConcurrentHashMap.newKeySet();
        private final CounterWorkload workload;
        private final RedisReactiveCommands<String, String> redis;

        Orders(CounterWorkload workload, RedisReactiveCommands<String, String> redis) {
            this.workload = workload;
            this.redis = redis;
        }

        public int calls() {
            return calls.get();
        }

        /** The orders whose lock key {@code lock:{order:<id>}} existed in Redis while {@link #pay} ran for them. */
        public Set<String> lockedWhilePaying() {
            return lockedWhilePaying;
        }

        @WithLock(name = "'order:' + #order.id", ttl = "10s", acquireTimeout = "60s")
        public Mono<String> pay(Order order) {
            calls.incrementAndGet();
            return redis.exists("lock:{order:" + order.id() + "}")
                    .doOnNext(keys -> {
                        if (keys == 1) {
                            lockedWhilePaying.add(order.id());
                        }
                    })
                    .then(workload.body());
        }

        @WithLock(name = "#p0 + ':' + #a1", ttl = "${orders.ttl}")
        public Mono<Long> touch(String region, long id) {
            return redis.pttl("lock:{" + region + ":" + id + "}");
        }

        @WithLock(name = "'order:' + #order.note.trim()", ttl = "10s")
        public Mono<String> byNote(Order order) {
            calls.incrementAndGet();
            return Mono.just("unreachable");
        }

        @WithLock(name = "#order.note", ttl = "10s")
        public Mono<String> byNullNote(Order order) {
            calls.incrementAndGet();
            return Mono.just("unreachable");
        }
    }

    /** Locked methods that return what the test gave {@code return...}; proxied, so reached through methods only. */
    public static class Feeds {
        private final AtomicInteger calls = new AtomicInteger();
        private volatile Flux<Integer> flux = Flux.empty();
        private volatile @Nullable Mono<String> mono = Mono.empty();
        private final RedisReactiveCommands<String, String> redis;

        Feeds(RedisReactiveCommands<String, String> redis) {
            this.redis = redis;
        }

        public int calls() {
            return calls.get();
        }

        public void returnFlux(Flux<Integer> flux) {
            this.flux = flux;
        }

        public void returnMono(@Nullable Mono<String> mono) {
            this.mono = mono;
        }

        @WithLock(name = "'feed:' + #feed", ttl = "10s")
        public Flux<Integer> read(String feed) {
            calls.incrementAndGet();
            return flux;
        }

        @WithLock(name = "'feed:' + #feed", ttl = "300ms")
        public Flux<Integer> readOnShortLease(String feed) {
            calls.incrementAndGet();
            return flux;
        }

        @WithLock(name = "'feed:' + #feed", ttl = "10s", acquireTimeout = "0s", onBusy = OnBusy.SKIP)
        public Flux<Integer> readIfFree(String feed) {
            calls.incrementAndGet();
            return flux;
        }

        @WithLock(name = "'feed:' + #feed", ttl = "10s", acquireTimeout = "0s")
        public @Nullable Mono<String> refresh(String feed) {
            calls.incrementAndGet();
            return mono;
        }

        @WithLock(name = "'feed:' + #feed", ttl = "10s", acquireTimeout = "0s", onBusy = OnBusy.SKIP)
        public @Nullable Mono<String> refreshIfFree(String feed) {
            calls.incrementAndGet();
            return mono;
        }

        @WithLock(name = "'feed:' + #feed", ttl = "10s")
        public Mono<String> failing(String feed) {
            throw new IllegalStateException("thrown by the method");
        }

        @WithLock(name = "'feed:' + #feed", ttl = "10s")
        public Mono<Long> heldInside(String feed) {
            calls.incrementAndGet();
            return redis.exists("lock:{feed:" + feed + "}");
        }
    }

    public static class BlockingJob {
        @WithLock(name = "'total:' + #day", ttl = "10s")
        public String total(String day) {
            return day;
        }
    }

    public static class BadName {
        @WithLock(name = "'order:' + ", ttl = "10s")
        public Mono<Void> run() {
            return Mono.empty();
        }
    }

    public static class BadTtl {
        @WithLock(name = "'x'", ttl = "${no.such.property}")
        public Mono<Void> run() {
            return Mono.empty();
        }
    }

    /** {@link Outer} calls {@link Inner} for the name it holds. */
    @Configuration(proxyBeanMethods = false)
    static class Nested {
        @Bean
        Inner inner() {
            return new Inner();
        }

        @Bean
        Outer outer(Inner inner) {
            return new Outer(inner);
        }
    }

    public static class Inner {
        @WithLock(name = "#name", ttl = "10s", acquireTimeout = "0s")
        public Mono<String> run(String name) {
            return Mono.just("inner");
        }
    }

    public static class Outer {
        private final Inner inner;

        Outer(Inner inner) {
            this.inner = inner;
        }

        @WithLock(name = "#name", ttl = "10s")
        public Mono<String> mono(String name) {
            return inner.run(name);
        }

        @WithLock(name = "#name", ttl = "10s")
        public Flux<String> flux(String name) {
            return Flux.from(inner.run(name));
        }
    }
}
