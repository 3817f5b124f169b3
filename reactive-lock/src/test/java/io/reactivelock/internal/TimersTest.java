package io.reactivelock.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.test.scheduler.VirtualTimeScheduler;

class TimersTest {

    /** A virtual-time scheduler that counts the delayed tasks handed to it. */
    private static final class Counting {
        final VirtualTimeScheduler clock = VirtualTimeScheduler.create();
        final AtomicInteger delayed = new AtomicInteger();
        final Scheduler scheduler = new Scheduler() {
            @Override
            public Disposable schedule(Runnable task) {
                return clock.schedule(task);
            }

            @Override
            public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
                delayed.incrementAndGet();
                return clock.schedule(task, delay, unit);
            }

            @Override
            public long now(TimeUnit unit) {
                return clock.now(unit);
            }

            @Override
            public Worker createWorker() {
                return clock.createWorker();
            }
        };
    }

    @Test
    void tasksRunAtTheirDueTimeInOrderAndACancelledOneNever() {
        Counting c = new Counting();
        Timers timers = new Timers(() -> c.scheduler);
        List<String> ran = new CopyOnWriteArrayList<>();
        timers.schedule(() -> ran.add("b@300"), 300, TimeUnit.MILLISECONDS);
        timers.schedule(() -> ran.add("a@100"), 100, TimeUnit.MILLISECONDS);
        Disposable cancelled = timers.schedule(() -> ran.add("cancelled@200"), 200, TimeUnit.MILLISECONDS);
        timers.schedule(() -> ran.add("c@300"), 300, TimeUnit.MILLISECONDS);

        c.clock.advanceTimeBy(java.time.Duration.ofMillis(99));
        assertThat(ran).isEmpty();
        c.clock.advanceTimeBy(java.time.Duration.ofMillis(1));
        assertThat(ran).containsExactly("a@100");
        cancelled.dispose();
        assertThat(cancelled.isDisposed()).isTrue();
        c.clock.advanceTimeBy(java.time.Duration.ofMillis(199));
        assertThat(ran).containsExactly("a@100");
        c.clock.advanceTimeBy(java.time.Duration.ofMillis(1));
        assertThat(ran).containsExactly("a@100", "b@300", "c@300");
    }

    @Test
    void aTaskDueAfterAnArmedTimerArmsNoOtherOnTheScheduler() {
        Counting c = new Counting();
        Timers timers = new Timers(() -> c.scheduler);
        // Timeouts as an uncontended lock makes them: each later than the one before, and cancelled by its reply.
        for (int i = 0; i < 100; i++) {
            timers.schedule(() -> { }, 2_000 + i, TimeUnit.MILLISECONDS).dispose();
        }
        assertThat(c.delayed).as("timers armed on the scheduler for 100 later timeouts").hasValue(1);

        List<String> ran = new CopyOnWriteArrayList<>();
        timers.schedule(() -> ran.add("earlier"), 50, TimeUnit.MILLISECONDS);
        assertThat(c.delayed).as("a task due before every armed timer arms its own").hasValue(2);
        timers.schedule(() -> ran.add("later"), 3_000, TimeUnit.MILLISECONDS);
        c.clock.advanceTimeBy(java.time.Duration.ofMillis(3_000));
        assertThat(ran).containsExactly("earlier", "later");
    }

    @Test
    void anotherSchedulerThanTheOneItWasMadeOnGetsTheTasksDirectly() {
        Counting made = new Counting();
        Counting later = new Counting();
        AtomicReference<Scheduler> current = new AtomicReference<>(made.scheduler);
        Timers timers = new Timers(current::get);
        current.set(later.scheduler); // as a virtual-time scheduler installed after the lock was made
        List<String> ran = new CopyOnWriteArrayList<>();
        for (int i = 1; i <= 3; i++) {
            timers.schedule(() -> ran.add("task"), 10_000 * i, TimeUnit.MILLISECONDS);
        }
        assertThat(later.delayed).hasValue(3);
        assertThat(made.delayed).hasValue(0);
        later.clock.advanceTimeBy(java.time.Duration.ofSeconds(30));
        assertThat(ran).hasSize(3);
    }

    @Test
    void underConcurrentSchedulingAndCancellingEveryTaskNotCancelledRunsOnce() throws InterruptedException {
        Timers timers = new Timers(Schedulers::parallel);
        int tasks = 4_000;
        AtomicInteger[] runs = new AtomicInteger[tasks];
        CountDownLatch kept = new CountDownLatch(tasks / 2);
        ConcurrentLinkedQueue<Integer> cancelledRan = new ConcurrentLinkedQueue<>();
        Flux.range(0, tasks)
                .parallel(4)
                .runOn(Schedulers.parallel())
                .doOnNext(i -> {
                    runs[i] = new AtomicInteger();
                    boolean keep = i % 2 == 0;
                    Disposable d = timers.schedule(() -> {
                        runs[i].incrementAndGet();
                        if (keep) {
                            kept.countDown();
                        } else {
                            cancelledRan.add(i);
                        }
                    }, i % 50, TimeUnit.MILLISECONDS);
                    if (!keep) {
                        d.dispose();
                    }
                })
                .sequential()
                .blockLast();
        assertThat(kept.await(30, TimeUnit.SECONDS)).as("every kept task ran").isTrue();
        // Ran at most once each; a cancelled one only if its timer had fired before the dispose.
        for (int i = 0; i < tasks; i += 2) {
            assertThat(runs[i]).as("task %d", i).hasValue(1);
        }
        for (Integer i : cancelledRan) {
            assertThat(runs[i]).as("cancelled task %d", i).hasValue(1);
        }
    }
}
