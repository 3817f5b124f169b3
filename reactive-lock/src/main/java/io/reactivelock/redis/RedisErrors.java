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
     * to one node rather than routed ({@code MOVED}, as {@link ClusterAcks} sends grants). False for errors retrying cannot mend,
     * such as {@code NOPERM}, {@code WRONGPASS}, {@code NOAUTH} or {@code WRONGTYPE}: they must
     * surface at once, not look like a busy lock.
     */
    public static boolean isTransient(Throwable error) {
        Throwable e = LockCore.unwrap(error);
        if (e instanceof RedisCommandExecutionException) {
            String message = String.valueOf(e.getMessage());
            return message.startsWith("LOADING") || message.startsWith("BUSY") || message.startsWith("TRYAGAIN")
                    || message.startsWith("CLUSTERDOWN") || message.startsWith("MASTERDOWN")
                    || message.startsWith("READONLY") || message.contains(" -READONLY ") || message.startsWith("MOVED");
        }
        return e instanceof RedisException || e instanceof IOException || e instanceof TimeoutException;
    }
}
