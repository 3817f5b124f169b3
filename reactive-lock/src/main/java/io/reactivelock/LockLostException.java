package io.reactivelock;

import org.jspecify.annotations.Nullable;

/**
 * The lease was lost while the body ran: renewal found the key gone or held by another token, or
 * could not reach Redis before the lease ran out. The body was cancelled; whatever it wrote
 * after the loss must be treated as unprotected (use the fencing token).
 */
public final class LockLostException extends LockException {

    private static final long serialVersionUID = 1L;

    /** For implementations of {@link ReactiveLock}; users receive it, they do not create it. */
    public LockLostException(String lockName, String reason, @Nullable Throwable cause) {
        super(lockName, "Lost lock '" + lockName + "': " + reason, cause);
    }
}
