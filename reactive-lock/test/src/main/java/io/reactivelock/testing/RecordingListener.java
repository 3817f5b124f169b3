package io.reactivelock.testing;

import io.reactivelock.LockException;
import io.reactivelock.LockListener;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A {@link LockListener} that records what it hears as short strings ({@code "acquired a"}), with
 * the failures and losses, for a test to assert on what a lock told its listener (the contracts
 * here do). Safe to read from the test thread while locks call it from theirs.
 */
public final class RecordingListener implements LockListener {

    /** Every event in arrival order, as the method name and the lock name. */
    public final List<String> list = new CopyOnWriteArrayList<>();
    /** The errors heard by {@link #acquireFailed}. */
    public final List<Throwable> failures = new CopyOnWriteArrayList<>();
    /** The errors heard by {@link #lost}. */
    public final List<LockException> lost = new CopyOnWriteArrayList<>();

    @Override
    public void acquired(String name, Duration waited) {
        list.add("acquired " + name);
    }

    @Override
    public void acquireFailed(String name, Throwable error, Duration waited) {
        list.add("acquireFailed " + name);
        failures.add(error);
    }

    @Override
    public void renewed(String name) {
        list.add("renewed " + name);
    }

    @Override
    public void lost(String name, LockException error) {
        list.add("lost " + name);
        lost.add(error);
    }

    @Override
    public void released(String name, Duration held) {
        list.add("released " + name);
    }

    @Override
    public void handedOff(String name) {
        list.add("handedOff " + name);
    }
}
