package io.reactivelock.redis;

import io.reactivelock.spi.LockCore;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisException;
import java.io.IOException;
import java.util.concurrent.TimeoutException;

/** Which Redis failures are worth retrying. */
final class RedisErrors {

    private RedisErrors() {}

    /**
     * True for failures that may pass on their own: no connection, no reply in time, a server
     * loading, busy or failing over (including a script's write refused by a replica, which
     * Redis before 7 reports as {@code ERR Error running script ... -READONLY ...}), a Cluster
     * slot whose keys are half moved ({@code TRYAGAIN}), or a slot that moved under a command sent
     * to one node rather than routed ({@link #isRedirect}). False for errors retrying cannot mend,
     * such as {@code NOPERM}, {@code WRONGPASS}, {@code NOAUTH} or {@code WRONGTYPE}: they must
     * surface at once, not look like a busy lock.
     */
    public static boolean isTransient(Throwable error) {
        Throwable e = LockCore.unwrap(error);
        if (e instanceof RedisCommandExecutionException) {
            String message = String.valueOf(e.getMessage());
            return message.startsWith("LOADING") || message.startsWith("BUSY") || message.startsWith("TRYAGAIN")
                    || message.startsWith("CLUSTERDOWN") || message.startsWith("MASTERDOWN")
                    || message.startsWith("READONLY") || message.contains(" -READONLY ") || isRedirect(e);
        }
        return e instanceof RedisException || e instanceof IOException || e instanceof TimeoutException;
    }

    /**
     * True for a Cluster's redirect ({@code MOVED}, {@code ASK}): the answer to a command sent to
     * one node rather than routed by Lettuce, which follows them itself (as {@link ClusterAcks}
     * sends grants), when the slot has moved or is moving.
     */
    static boolean isRedirect(Throwable error) {
        Throwable e = LockCore.unwrap(error);
        String message = String.valueOf(e.getMessage());
        return e instanceof RedisCommandExecutionException && (message.startsWith("MOVED ") || message.startsWith("ASK "));
    }
}
