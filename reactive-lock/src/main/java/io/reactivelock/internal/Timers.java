package io.reactivelock.internal;

import java.util.Comparator;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.Exceptions;
import reactor.core.scheduler.Scheduler;
import reactor.util.Logger;
import reactor.util.Loggers;

/**
 * The delayed tasks of one lock, kept in a queue of their own and put on the options' scheduler
 * one underlying timer at a time: a task is handed to the scheduler only when it is due before
 * every timer already armed there. Most of the lock's timers are timeouts that a reply cancels
 * (of an attempt, a renewal, a release) or renewals due seconds away, each later than the one
 * armed before it, so an uncontended acquire-and-release pair arms none: the scheduler's thread
 * is not woken to re-sort its queue for a timer that will never fire (three wake-ups per pair
 * were a fifth of the CPU an uncontended pair cost).
 *
 * <p>Times are read from the options' scheduler, which is resolved at each use as
 * {@link io.reactivelock.LockOptions#scheduler()} is: while it is the one this queue was made on,
 * tasks go through the queue; any other (a virtual-time scheduler installed later) gets them
 * directly. A cancelled task leaves the queue at once; a timer armed for it still fires and finds
 * nothing to run.
 */
public final class Timers implements Scheduler {

    private static final Logger log = Loggers.getLogger(Timers.class);

    private final Supplier<Scheduler> scheduler;
    private final Scheduler clock;
    private final AtomicLong order = new AtomicLong();
    private final ConcurrentSkipListSet<Task> queue = new ConcurrentSkipListSet<>(
            Comparator.comparingLong((Task t) -> t.due).thenComparingLong(t -> t.order));
    /** Sorts before every task: {@code ceiling(beforeAll)} is the first task, or null when there is none. */
    private final Task beforeAll = new Task(() -> { }, Long.MIN_VALUE, Long.MIN_VALUE);
    /** When the timers armed on the scheduler are due. */
    private final ConcurrentSkipListSet<Long> armed = new ConcurrentSkipListSet<>();

    /** Timers on whatever {@code scheduler} gives at each use, queued while it gives what it gives now. */
    public Timers(Supplier<Scheduler> scheduler) {
        this.scheduler = scheduler;
        this.clock = scheduler.get();
    }

    @Override
    public Disposable schedule(Runnable task) {
        return scheduler.get().schedule(task);
    }

    @Override
    public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
        Scheduler s = scheduler.get();
        if (s != clock) {
            return s.schedule(task, delay, unit);
        }
        Task t = new Task(task, clock.now(TimeUnit.NANOSECONDS) + unit.toNanos(delay), order.incrementAndGet());
        queue.add(t);
        armFor(t.due);
        return t;
    }

    @Override
    public long now(TimeUnit unit) {
        return scheduler.get().now(unit);
    }

    @Override
    public Worker createWorker() {
        return scheduler.get().createWorker();
    }

    /** Arms a timer for {@code due} unless one is armed for that time or earlier. */
    private void armFor(long due) {
        Long earliest = armed.ceiling(Long.MIN_VALUE);
        if (earliest != null && earliest <= due) {
            return;
        }
        armed.add(due);
        clock.schedule(() -> fire(due), Math.max(0, due - clock.now(TimeUnit.NANOSECONDS)), TimeUnit.NANOSECONDS);
    }

    /** The timer armed for {@code due} fired: runs what is due, and arms one for the next task if none is. */
    private void fire(long due) {
        armed.remove(due);
        long now = Math.max(due, clock.now(TimeUnit.NANOSECONDS));
        for (Task t = first(); t != null && t.due <= now; t = first()) {
            if (queue.remove(t)) {
                try {
                    t.task.run();
                } catch (RuntimeException | Error e) {
                    Exceptions.throwIfJvmFatal(e);
                    log.error("A timer task failed", e);
                }
            }
        }
        Task next = first();
        if (next != null) {
            armFor(next.due);
        }
    }

    private @Nullable Task first() {
        return queue.ceiling(beforeAll);
    }

    private final class Task implements Disposable {
        final Runnable task;
        final long due;
        final long order;

        Task(Runnable task, long due, long order) {
            this.task = task;
            this.due = due;
            this.order = order;
        }

        @Override
        public void dispose() {
            queue.remove(this);
        }

        @Override
        public boolean isDisposed() {
            return !queue.contains(this);
        }
    }
}
