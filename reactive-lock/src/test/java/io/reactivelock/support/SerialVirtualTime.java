package io.reactivelock.support;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * A virtual clock that other threads may schedule on while the test moves it: Reactor's
 * {@link VirtualTimeScheduler} with every call into it (schedule, cancel, now, advance) under one
 * monitor, and each task guarded.
 *
 * <p>A lock on a real Redis schedules on its clock from Lettuce's event loops, and reactor-test's
 * scheduler (3.8.7) is safe for one thread only: its drain peeks at the first due task and then
 * polls the queue's head, so a task another thread adds in between (an immediate task sorts first)
 * or cancels is dropped, and the peeked one runs again later. In a scratch program (a thread
 * scheduling 2,000 immediate tasks while another advanced the clock, 200 times) 22 of 400,000
 * tasks never ran. A dropped task is a renewal, a retry or a timer of the lock that never comes;
 * the lock's tests on virtual time stalled that way about one run in eight (issue 36). And a task
 * that throws leaves that scheduler unable to run any task again (its drain rethrows without
 * lowering its work counter); here it is recorded in {@link #thrown()} instead.
 *
 * <p>Workers are not offered: the lock schedules on the scheduler itself, and a worker would
 * bypass the monitor.
 */
public final class SerialVirtualTime implements Scheduler {

    private final VirtualTimeScheduler time = VirtualTimeScheduler.create();
    private final List<Throwable> thrown = new CopyOnWriteArrayList<>();

    /** Moves the clock, running every task due by then, on the calling thread. */
    public synchronized void advanceTimeBy(Duration delay) {
        time.advanceTimeBy(delay);
    }

    /** What the tasks this clock ran threw. */
    public List<Throwable> thrown() {
        return thrown;
    }

    @Override
    public synchronized Disposable schedule(Runnable task) {
        return serial(time.schedule(guarded(task)));
    }

    @Override
    public synchronized Disposable schedule(Runnable task, long delay, TimeUnit unit) {
        return serial(time.schedule(guarded(task), delay, unit));
    }

    @Override
    public synchronized long now(TimeUnit unit) {
        return time.now(unit);
    }

    @Override
    public Worker createWorker() {
        throw new UnsupportedOperationException("no workers: they would schedule past the monitor");
    }

    @Override
    public synchronized void dispose() {
        time.dispose();
    }

    @Override
    public boolean isDisposed() {
        return time.isDisposed();
    }

    private Runnable guarded(Runnable task) {
        return () -> {
            try {
                task.run();
            } catch (Throwable e) {
                thrown.add(e);
            }
        };
    }

    /** A cancel (which removes the task from the clock's queue, and drains it) under the monitor too. */
    private Disposable serial(Disposable task) {
        return new Disposable() {
            @Override
            public void dispose() {
                synchronized (SerialVirtualTime.this) {
                    task.dispose();
                }
            }

            @Override
            public boolean isDisposed() {
                return task.isDisposed();
            }
        };
    }
}
