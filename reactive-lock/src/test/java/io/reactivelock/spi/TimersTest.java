package io.reactivelock.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
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

    /** Reactor's parallel scheduler, whose wall clock the test steps by {@code offset}. */
    private static Scheduler wallClockSteppedBy(AtomicLong offsetMillis) {
        Scheduler parallel = Schedulers.parallel();
        return new Scheduler() {
            @Override
            public Disposable schedule(Runnable task) {
                return parallel.schedule(task);
            }

            @Override
            public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
                return parallel.schedule(task, delay, unit);
            }

            @Override
            public long now(TimeUnit unit) {
                return unit.convert(System.currentTimeMillis() + offsetMillis.get(), TimeUnit.MILLISECONDS);
            }

            @Override
            public Worker createWorker() {
                return parallel.createWorker();
            }
        };
    }

    @Test
    void aStepOfTheWallClockNeitherFiresATaskEarlyNorDelaysIt() throws InterruptedException {
        AtomicLong offset = new AtomicLong();
        Timers timers = timersOn(wallClockSteppedBy(offset));
        // In each half, the task due in 100 ms fires after the step and makes the queue look at the
        // time for the one due in 300 ms: on the stepped clock that one would run at once (an hour
        // ahead) or an hour late (an hour back).
        long start = System.nanoTime();
        AtomicLong ranAfter = new AtomicLong();
        CountDownLatch ran = new CountDownLatch(1);
        timers.schedule(() -> { }, 100, TimeUnit.MILLISECONDS);
        timers.schedule(() -> {
            ranAfter.set(System.nanoTime() - start);
            ran.countDown();
        }, 300, TimeUnit.MILLISECONDS);
        offset.set(TimeUnit.HOURS.toMillis(1));
        assertThat(ran.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(ranAfter.get()).as("ran after its 300 ms, not when the wall clock jumped ahead")
                .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(300));

        CountDownLatch ranToo = new CountDownLatch(1);
        timers.schedule(() -> { }, 100, TimeUnit.MILLISECONDS);
        timers.schedule(ranToo::countDown, 300, TimeUnit.MILLISECONDS);
        offset.set(-TimeUnit.HOURS.toMillis(1));
        assertThat(ranToo.await(10, TimeUnit.SECONDS)).as("ran within 10 s of its 300 ms after the clock stepped back")
                .isTrue();
    }

    @Test
    void aTimerTheSchedulerRefusedDoesNotKeepLaterTasksFromBeingArmed() {
        Counting c = new Counting();
        AtomicInteger refusals = new AtomicInteger(1);
        Scheduler refusingOnce = new Scheduler() {
            @Override
            public Disposable schedule(Runnable task) {
                return c.scheduler.schedule(task);
            }

            @Override
            public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
                if (refusals.getAndDecrement() > 0) {
                    throw new RejectedExecutionException("full");
                }
                return c.scheduler.schedule(task, delay, unit);
            }

            @Override
            public long now(TimeUnit unit) {
                return c.clock.now(unit);
            }

            @Override
            public Worker createWorker() {
                return c.clock.createWorker();
            }
        };
        Timers timers = timersOn(refusingOnce);
        List<String> ran = new CopyOnWriteArrayList<>();
        assertThatThrownBy(() -> timers.schedule(() -> ran.add("refused"), 100, TimeUnit.MILLISECONDS))
                .isInstanceOf(RejectedExecutionException.class);
        timers.schedule(() -> ran.add("later"), 200, TimeUnit.MILLISECONDS);
        c.clock.advanceTimeBy(java.time.Duration.ofMillis(200));
        assertThat(ran).containsExactly("later");
    }

    private static Timers timersOn(Scheduler scheduler) {
        return new Timers(() -> scheduler);
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
