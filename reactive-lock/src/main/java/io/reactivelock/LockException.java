package io.reactivelock;

import org.jspecify.annotations.Nullable;

/** Base of the errors this library signals; each names the lock it concerns. */
public abstract class LockException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final String lockName;

    LockException(String lockName, String message, @Nullable Throwable cause) {
        super(message, cause);
        this.lockName = lockName;
    }

    /** The name of the lock, as given to {@code withLock}. */
    public String lockName() {
        return lockName;
    }
}
