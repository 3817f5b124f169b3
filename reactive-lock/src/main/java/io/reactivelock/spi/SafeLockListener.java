package io.reactivelock.spi;

import io.reactivelock.LockException;
import io.reactivelock.LockListener;
import java.time.Duration;
import reactor.util.Logger;
import reactor.util.Loggers;

/** Calls a user's {@link LockListener} so that an exception it throws never reaches the lock. */
public final class SafeLockListener implements LockListener {

    private static final Logger log = Loggers.getLogger(SafeLockListener.class);

    private final LockListener delegate;

    private SafeLockListener(LockListener delegate) {
        this.delegate = delegate;
    }

    /** {@code listener}, guarded; {@link LockListener#NONE} as is. */
    public static LockListener of(LockListener listener) {
        return listener == LockListener.NONE || listener instanceof SafeLockListener
                ? listener
                : new SafeLockListener(listener);
    }

    @Override
    public void acquired(String name, Duration waited) {
        guard(() -> delegate.acquired(name, waited));
    }

    @Override
    public void acquireFailed(String name, Throwable error, Duration waited) {
        guard(() -> delegate.acquireFailed(name, error, waited));
    }

    @Override
    public void renewed(String name) {
        guard(() -> delegate.renewed(name));
    }

    @Override
    public void lost(String name, LockException error) {
        guard(() -> delegate.lost(name, error));
    }

    @Override
    public void released(String name, Duration held) {
        guard(() -> delegate.released(name, held));
    }

    @Override
    public void handedOff(String name) {
        guard(() -> delegate.handedOff(name));
    }

    private void guard(Runnable call) {
        try {
            call.run();
        } catch (RuntimeException e) {
            log.warn("LockListener {} failed; ignored", delegate, e);
        }
    }
}
