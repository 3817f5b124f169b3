package io.reactivelock.spi;

import io.reactivelock.LockListener;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import java.time.Duration;
import java.util.Objects;

/** The call-time checks of {@code withLock}'s arguments, documented on {@link ReactiveLock}. */
public final class Arguments {

    private Arguments() {}

    /**
     * The checks every {@code withLock} makes of its arguments, plus {@code more} (an
     * implementation's own); a failure is told to {@code listener}, then thrown.
     */
    public static void checkCall(String name, Duration ttl, Object body, LockOptions options, LockListener listener,
            Runnable more) {
        try {
            checkName(name);
            checkTtl(ttl, options);
            Objects.requireNonNull(body, "body");
            more.run();
        } catch (RuntimeException e) {
            listener.acquireFailed(String.valueOf(name), e, Duration.ZERO);
            throw e;
        }
    }

    /** Checks a lock name; returns it. */
    public static String checkName(String name) {
        Objects.requireNonNull(name, "name");
        if (name.isEmpty() || name.length() > ReactiveLock.MAX_NAME_LENGTH) {
            throw new IllegalArgumentException("lock name must have 1 to " + ReactiveLock.MAX_NAME_LENGTH
                    + " characters, got " + name.length());
        }
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < name.length() && Character.isLowSurrogate(name.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                // Unpaired surrogates have no UTF-8 form: two such names would share one key.
                throw new IllegalArgumentException("lock name has an unpaired surrogate character at index " + i);
            }
        }
        return name;
    }

    /** Checks an acquire timeout: not null, not negative (zero tries once). */
    public static Duration checkAcquireTimeout(Duration acquireTimeout) {
        Objects.requireNonNull(acquireTimeout, "acquireTimeout");
        if (acquireTimeout.isNegative()) {
            throw new IllegalArgumentException("acquireTimeout must not be negative, got " + acquireTimeout);
        }
        return acquireTimeout;
    }

    /** Checks a lease TTL against the minimum, the maximum lease time and the renewal interval. */
    public static Duration checkTtl(Duration ttl, LockOptions options) {
        Objects.requireNonNull(ttl, "ttl");
        if (ttl.compareTo(Duration.ofMillis(ReactiveLock.MIN_TTL_MILLIS)) < 0) {
            throw new IllegalArgumentException("ttl must be at least " + ReactiveLock.MIN_TTL_MILLIS + " ms, got " + ttl);
        }
        if (ttl.compareTo(options.maxLeaseTime()) > 0) {
            throw new IllegalArgumentException("ttl (" + ttl + ") must not exceed maxLeaseTime (" + options.maxLeaseTime() + ")");
        }
        Duration renewal = options.renewalInterval();
        if (renewal != null && renewal.compareTo(ttl) >= 0) {
            throw new IllegalArgumentException("renewalInterval (" + renewal + ") must be below the ttl (" + ttl + ")");
        }
        return ttl;
    }
}
