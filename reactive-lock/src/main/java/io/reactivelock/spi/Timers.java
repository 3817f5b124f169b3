package io.reactivelock.spi;

import java.util.Comparator;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;

/**
 * The delayed tasks of one lock, kept in a queue of their own and put on the options' scheduler
 * one underlying timer at a time: a task is handed to the scheduler only when it is due before
 * every timer already armed there. Most of the lock's timers are timeouts that a reply cancels
 * (of an attempt, a renewal, a release) or renewals due seconds away, each later than the one
 * armed before it, so an uncontended acquire-and-release pair arms none: the scheduler's thread
 * is not woken to re-sort its queue for a timer that will never fire (three wake-ups per pair
 * were a fifth of the CPU an uncontended pair cost). A due task runs as an immediate task of the
 * scheduler, so due tasks still spread over its workers.
 *
 * <p>The clock: a scheduler whose {@code now} reads the wall clock (Reactor's own schedulers) is
 * timed with {@link System#nanoTime()} instead, so that a step of the wall clock neither fires
 * timeouts early nor delays renewals; any other clock (virtual time) is used as it is. The
 * scheduler is resolved at each use, as {@link io.reactivelock.LockOptions#scheduler()} is: while
 * it is the one this queue was made on, tasks go through the queue; any other (a virtual-time
 * scheduler installed later) gets them directly. A cancelled task leaves the queue at once; a
 * timer armed for it still fires and finds nothing to run.
 */
final class Timers implements Scheduler {

    private final Supplier<Scheduler> scheduler;
    private final Scheduler clock;
    private final boolean monotonic;
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
        this.monotonic = readsWallClock(clock);
    }

    /** Whether {@code s} tells the wall clock's time (within a second), as Reactor's real-time schedulers do. */
    private static boolean readsWallClock(Scheduler s) {
        return Math.abs(s.now(TimeUnit.MILLISECONDS) - System.currentTimeMillis()) < 1_000;
    }

    /** How many delayed tasks wait in this queue now (cancelled ones leave it at once); for tests. */
    public int pending() {
        return queue.size();
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
        Task t = new Task(task, nanos() + unit.toNanos(delay), order.incrementAndGet());
        queue.add(t);
        try {
            armFor(t.due);
        } catch (RuntimeException rejected) {
            queue.remove(t);
            throw rejected;
        }
        return t;
    }

    @Override
    public long now(TimeUnit unit) {
        Scheduler s = scheduler.get();
        return s == clock && monotonic ? unit.convert(System.nanoTime(), TimeUnit.NANOSECONDS) : s.now(unit);
    }

    @Override
    public Worker createWorker() {
        return scheduler.get().createWorker();
    }

    private long nanos() {
        return monotonic ? System.nanoTime() : clock.now(TimeUnit.NANOSECONDS);
    }

    /** Arms a timer for {@code due} unless one is armed for that time or earlier. */
    private void armFor(long due) {
        Long earliest = armed.ceiling(Long.MIN_VALUE);
        if (earliest != null && earliest <= due) {
            return;
        }
        armed.add(due);
        try {
            clock.schedule(() -> fire(due), Math.max(0, due - nanos()), TimeUnit.NANOSECONDS);
        } catch (RuntimeException rejected) {
            armed.remove(due); // else no timer would ever be armed again for a later task
            throw rejected;
        }
    }

    /** The timer armed for {@code due} fired: hands on what is due, and arms one for the next task if none is. */
    private void fire(long due) {
        armed.remove(due);
        long now = Math.max(due, nanos());
        for (Task t = first(); t != null && t.due <= now; t = first()) {
            if (queue.remove(t)) {
                clock.schedule(t.task);
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
