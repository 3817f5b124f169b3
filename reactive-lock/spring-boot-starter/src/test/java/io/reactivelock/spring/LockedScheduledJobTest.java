package io.reactivelock.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockListener;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.spring.WithLock.OnBusy;
import io.reactivelock.support.CriticalSectionHistory;
import io.reactivelock.support.RecordingListener;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * Reactive {@code @Scheduled} jobs with {@link WithLock}, run by Spring's own scheduling in two
 * application contexts on one Redis: the two instances of an application.
 */
@WithRedis
class LockedScheduledJobTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    private RedisServer redis;
    private final RecordingListener listener = new RecordingListener();

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
    }

    /** One instance of the application: the auto-configured lock on the test's Redis, Spring scheduling, and {@code job}. */
    private <J> ApplicationContextRunner instance(Class<J> type, Supplier<J> job) {
        return unscheduled(type, job).withUserConfiguration(Scheduling.class);
    }

    /** An instance without Spring scheduling: its test subscribes to the job's result as a tick does. */
    private <J> ApplicationContextRunner unscheduled(Class<J> type, Supplier<J> job) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(ReactiveLockAutoConfiguration.class, ReactiveLockAnnotationAutoConfiguration.class))
                .withPropertyValues("spring.data.redis.url=redis://" + redis.host() + ":" + redis.port())
                .withBean(LockListener.class, () -> listener)
                .withBean(type, job);
    }

    private boolean held(String name) {
        return redis.call("EXISTS", "lock:{" + name + "}").equals("1");
    }

    private static long sectionsOf(CriticalSectionHistory history, String instance) {
        return history.sections().stream().filter(section -> section.process().equals(instance)).count();
    }

    @Test
    void twoInstancesRunTheLockedJobOneAtATime() {
        CriticalSectionHistory history = new CriticalSectionHistory();
        instance(ReportJob.class, () -> new ReportJob(history, "a")).run(a ->
                instance(ReportJob.class, () -> new ReportJob(history, "b")).run(b ->
                        await().atMost(TIMEOUT).until(() -> sectionsOf(history, "a") >= 5 && sectionsOf(history, "b") >= 5)));

        assertThat(history.overlaps()).as("runs of the job that overlapped").isEmpty();
        assertThat(history.maxOccupancy()).isEqualTo(1);
        // On a 5-minute lease: a run still going when its context closed was cancelled and released.
        assertThat(redis.call("PTTL", "lock:{report-job}")).as("PTTL of the job's lock once both contexts closed: gone")
                .isEqualTo("-2");
    }

    @Test
    void withoutTheLockTheTwoInstancesRunTheJobAtTheSameTime() {
        CriticalSectionHistory history = new CriticalSectionHistory();
        instance(UnlockedReportJob.class, () -> new UnlockedReportJob(history, "a")).run(a ->
                instance(UnlockedReportJob.class, () -> new UnlockedReportJob(history, "b")).run(b ->
                        await().atMost(TIMEOUT).until(() -> sectionsOf(history, "a") >= 5 && sectionsOf(history, "b") >= 5)));

        assertThat(history.maxOccupancy()).as("negative control: runs overlap when nothing prevents it").isGreaterThan(1);
    }

    @Test
    void lockedAtLeastForAJobStartsAtMostOncePerWindowAcrossInstancesThoughItEndsAtOnce() {
        List<Start> starts = new CopyOnWriteArrayList<>();
        instance(NightlyJob.class, () -> new NightlyJob(starts, "a")).run(a ->
                instance(NightlyJob.class, () -> new NightlyJob(starts, "b")).run(b ->
                        await().atMost(TIMEOUT).until(() -> starts.size() >= 4)));

        List<Long> gapsMillis = new ArrayList<>();
        for (int i = 1; i < starts.size(); i++) {
            gapsMillis.add((starts.get(i).nanos() - starts.get(i - 1).nanos()) / 1_000_000);
        }
        // The window counts from the run's subscription; this job records its start in Mono.fromRunnable, which runs
        // just after its subscriber got onSubscribe, so a start may come a scheduling delay after the window began
        // (4 ms once beside two busy loops): 200 ms of slack for it. Without the window the gaps are ~20 ms.
        assertThat(gapsMillis).as("time between two starts, ticks every 20 ms on each instance").allMatch(gap -> gap >= 1000 - 200);
    }

    @Test
    void lockedAtLeastForTheLockOutlivesTheRunUntilTheWindowClosesAndTheOtherInstanceSkipsMeanwhile() {
        VirtualTimeScheduler time = VirtualTimeScheduler.getOrSet();
        List<Start> starts = new CopyOnWriteArrayList<>();
        try {
            unscheduled(NightlyJob.class, () -> new NightlyJob(starts, "a")).run(a ->
                    unscheduled(NightlyJob.class, () -> new NightlyJob(starts, "b")).run(b -> {
                        NightlyJob jobA = a.getBean(NightlyJob.class);
                        NightlyJob jobB = b.getBean(NightlyJob.class);
                        StepVerifier.create(jobA.run()).expectComplete().verify(TIMEOUT);
                        assertThat(starts).extracting(Start::instance).containsExactly("a");
                        assertThat(held("nightly")).as("held after the run ended").isTrue();

                        StepVerifier.create(jobB.run()).expectComplete().verify(TIMEOUT);
                        time.advanceTimeBy(Duration.ofSeconds(1).minusNanos(1));
                        assertThat(held("nightly")).as("held 1 ns before the window closes").isTrue();
                        StepVerifier.create(jobB.run()).expectComplete().verify(TIMEOUT);
                        assertThat(starts).as("b's runs in the window were skipped").extracting(Start::instance).containsExactly("a");

                        time.advanceTimeBy(Duration.ofNanos(1));
                        await().atMost(TIMEOUT).until(() -> !held("nightly"));
                        StepVerifier.create(jobB.run()).expectComplete().verify(TIMEOUT);
                        assertThat(starts).extracting(Start::instance).containsExactly("a", "b");
                        time.advanceTimeBy(Duration.ofSeconds(1));
                        await().atMost(TIMEOUT).until(() -> !held("nightly"));
                    }));
        } finally {
            VirtualTimeScheduler.reset();
        }
    }

    /**
     * The window counts from the run's start, not from the grant before it: a run whose code takes
     * 100 ms when subscribed keeps its lock a whole second after it recorded its start. Counted from
     * the grant, the lock went 100 ms earlier (and starts on a busy machine came up to 3 ms closer
     * than the window).
     */
    @Test
    void lockedAtLeastForTheWindowCountsFromTheRunsStartNotFromTheGrant() {
        VirtualTimeScheduler time = VirtualTimeScheduler.getOrSet();
        List<Long> starts = new CopyOnWriteArrayList<>();
        try {
            unscheduled(SlowToStartJob.class, () -> new SlowToStartJob(starts)).run(context -> {
                StepVerifier.create(context.getBean(SlowToStartJob.class).run()).expectComplete().verify(TIMEOUT);
                assertThat(starts).as("the run's start, on the virtual clock that has not moved since").containsExactly(
                        time.now(TimeUnit.NANOSECONDS));
                time.advanceTimeBy(Duration.ofSeconds(1).minusNanos(1));
                assertThat(held("slow-start")).as("held 1 ns before a second after the run's start").isTrue();
                time.advanceTimeBy(Duration.ofNanos(1));
                await().atMost(TIMEOUT).until(() -> !held("slow-start"));
            });
        } finally {
            VirtualTimeScheduler.reset();
        }
    }

    @Test
    void aLongRunKeepsItsLockByRenewalWhileTheOtherInstanceSkips() {
        LongRuns runs = new LongRuns();
        instance(LongJob.class, () -> new LongJob(runs)).run(a -> instance(LongJob.class, () -> new LongJob(runs)).run(b -> {
            await().atMost(TIMEOUT).until(() -> runs.starts.get() == 1 && held("long-job"));
            String holder = redis.call("GET", "lock:{long-job}");
            long renewedBefore = renewals();

            // Five renewals every 500 ms take longer than the 1.5 s TTL: only renewal kept it.
            await().atMost(TIMEOUT).until(() -> renewals() >= renewedBefore + 5);

            assertThat(redis.call("GET", "lock:{long-job}")).as("the same holder").isEqualTo(holder);
            assertThat(runs.starts).as("the other instance's ticks were skipped").hasValue(1);
            runs.finish.tryEmitEmpty();
        }));
    }

    @Test
    void aLostLeaseCancelsTheRunningJobAndTicksSkipWhileAnotherHolderHasTheLock() {
        LongRuns runs = new LongRuns();
        instance(LongJob.class, () -> new LongJob(runs)).run(context -> {
            await().atMost(TIMEOUT).until(() -> runs.starts.get() == 1 && held("long-job"));

            redis.call("SET", "lock:{long-job}", "someone-else", "PX", "60000");

            await().atMost(TIMEOUT).until(() -> runs.cancels.get() == 1);
            assertThat(listener.lost).singleElement().isInstanceOf(LockLostException.class)
                    .satisfies(lost -> assertThat(lost.lockName()).isEqualTo("long-job"));
            int failedBefore = listener.failures.size();
            await().atMost(TIMEOUT).until(() -> listener.failures.size() >= failedBefore + 3);
            assertThat(runs.starts).as("ticks while someone else holds the lock").hasValue(1);

            redis.call("DEL", "lock:{long-job}");
            await().atMost(TIMEOUT).until(() -> runs.starts.get() == 2);
        });
        assertThat(runs.cancels).as("closing the context cancelled the second run").hasValue(2);
    }

    @Test
    void aRunGoingWhenTheContextClosesIsCancelledAndItsLockReleasedBeforeTheConnectionsClose() {
        LongRuns runs = new LongRuns();
        long[] closingAt = new long[1];
        instance(LongLeaseJob.class, () -> new LongLeaseJob(runs)).run(context -> {
            await().atMost(TIMEOUT).until(() -> runs.starts.get() == 1 && held("long-lease-job"));
            assertThat(Long.parseLong(redis.call("PTTL", "lock:{long-lease-job}"))).as("the run's lease, before close").isPositive();
            closingAt[0] = System.nanoTime();
        });
        Duration closing = Duration.ofNanos(System.nanoTime() - closingAt[0]);

        assertThat(redis.call("PTTL", "lock:{long-lease-job}")).as("PTTL of the run's lock (a 5-minute lease) once the context closed: gone")
                .isEqualTo("-2");
        assertThat(runs.cancels).as("closing the context cancelled the run").hasValue(1);
        assertThat(closing).as("the context's close, releases included (bounded by the close timeout)")
                .isLessThan(LockOptions.DEFAULT_CLOSE_TIMEOUT);
    }

    private long renewals() {
        return listener.list.stream().filter(event -> event.equals("renewed long-job")).count();
    }

    @Configuration(proxyBeanMethods = false)
    @EnableScheduling
    static class Scheduling {}

    /** The length of one run: 20 to 60 ms, so that the instance that held the lock is not also the first to tick after it. */
    private static Duration runLength() {
        return Duration.ofMillis(20 + ThreadLocalRandom.current().nextInt(40));
    }

    /** A run that takes 20 to 60 ms on a timer thread, every 20 ms: runs overlap unless something prevents it. */
    public static class ReportJob {
        private final CriticalSectionHistory history;
        private final String instance;

        ReportJob(CriticalSectionHistory history, String instance) {
            this.history = history;
            this.instance = instance;
        }

        @Scheduled(fixedRate = 20)
        @WithLock(name = "'report-job'", ttl = "5m", acquireTimeout = "0s", onBusy = OnBusy.SKIP)
        public Mono<Void> run() {
            return history.record(instance, "report-job", "-", 0, Mono.delay(runLength()).then());
        }
    }

    /** {@link ReportJob} without the lock. */
    public static class UnlockedReportJob {
        private final CriticalSectionHistory history;
        private final String instance;

        UnlockedReportJob(CriticalSectionHistory history, String instance) {
            this.history = history;
            this.instance = instance;
        }

        @Scheduled(fixedRate = 20)
        public Mono<Void> run() {
            return history.record(instance, "report-job", "-", 0, Mono.delay(runLength()).then());
        }
    }

    record Start(String instance, long nanos) {}

    /** A run whose own code takes 100 ms (of the virtual clock) when it is subscribed, before it records its start. */
    public static class SlowToStartJob {
        private final List<Long> starts;

        SlowToStartJob(List<Long> starts) {
            this.starts = starts;
        }

        @WithLock(name = "'slow-start'", ttl = "5m", lockAtLeastFor = "1s", acquireTimeout = "0s", onBusy = OnBusy.SKIP)
        public Mono<Void> run() {
            return Mono.defer(() -> {
                VirtualTimeScheduler time = VirtualTimeScheduler.get();
                time.advanceTimeBy(Duration.ofMillis(100));
                starts.add(time.now(TimeUnit.NANOSECONDS));
                return Mono.empty();
            });
        }
    }

    /** A run that ends at once, every 20 ms, locked for at least 1 s, on a lease (5 min) far longer than any wait here. */
    public static class NightlyJob {
        private final List<Start> starts;
        private final String instance;

        NightlyJob(List<Start> starts, String instance) {
            this.starts = starts;
            this.instance = instance;
        }

        @Scheduled(fixedRate = 20)
        @WithLock(name = "'nightly'", ttl = "5m", lockAtLeastFor = "1s", acquireTimeout = "0s", onBusy = OnBusy.SKIP)
        public Mono<Void> run() {
            return Mono.fromRunnable(() -> starts.add(new Start(instance, System.nanoTime())));
        }
    }

    /** What the runs of {@link LongJob} did, across instances; {@link #finish} ends the runs. */
    static final class LongRuns {
        final AtomicInteger starts = new AtomicInteger();
        final AtomicInteger cancels = new AtomicInteger();
        final Sinks.Empty<Void> finish = Sinks.empty();
    }

    /** A run that lasts until its context closes, on a 5-minute lease. */
    public static class LongLeaseJob {
        private final LongRuns runs;

        LongLeaseJob(LongRuns runs) {
            this.runs = runs;
        }

        @Scheduled(fixedRate = 50)
        @WithLock(name = "'long-lease-job'", ttl = "5m", acquireTimeout = "0s", onBusy = OnBusy.SKIP)
        public Mono<Void> run() {
            return Mono.<Void>never()
                    .doOnSubscribe(subscription -> runs.starts.incrementAndGet())
                    .doOnCancel(runs.cancels::incrementAndGet);
        }
    }

    /** A run that lasts until the test ends it, on a 1.5 s lease renewed every 500 ms (a 300 ms lease was lost under load 10 on 2 cores). */
    public static class LongJob {
        private final LongRuns runs;

        LongJob(LongRuns runs) {
            this.runs = runs;
        }

        @Scheduled(fixedRate = 50)
        @WithLock(name = "'long-job'", ttl = "1500ms", acquireTimeout = "0s", onBusy = OnBusy.SKIP)
        public Flux<Integer> run() {
            return runs.finish.asMono().thenMany(Flux.<Integer>empty())
                    .doOnSubscribe(subscription -> runs.starts.incrementAndGet())
                    .doOnCancel(runs.cancels::incrementAndGet);
        }
    }
}
