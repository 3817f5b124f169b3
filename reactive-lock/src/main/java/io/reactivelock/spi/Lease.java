package io.reactivelock.spi;

import io.reactivelock.LockLease;

/** The {@link LockLease} every lock of the library hands its holders; renewal extends it. */
public final class Lease implements LockLease {

    private final String name;
    private final String token;
    private final long fencingToken;
    private volatile long validUntilNanos;

    /** A {@code fencingToken} of {@link LockLease#NO_FENCING_TOKEN} means the lock issues none. */
    public Lease(String name, String token, long fencingToken, long validUntilNanos) {
        this.name = name;
        this.token = token;
        this.fencingToken = fencingToken;
        this.validUntilNanos = validUntilNanos;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String token() {
        return token;
    }

    @Override
    public boolean hasFencingToken() {
        return fencingToken != NO_FENCING_TOKEN;
    }

    @Override
    public long fencingToken() {
        if (!hasFencingToken()) {
            throw new UnsupportedOperationException("lock '" + name + "' issues no fencing token; see the README's Redlock section");
        }
        return fencingToken;
    }

    @Override
    public long validUntilNanos() {
        return validUntilNanos;
    }

    /** Records a renewal: the lease is now valid until the {@link System#nanoTime()} instant {@code nanos}. */
    public void extendTo(long nanos) {
        this.validUntilNanos = nanos;
    }

    @Override
    public String toString() {
        return "LockLease{name='" + name + "', fencingToken=" + (hasFencingToken() ? Long.toString(fencingToken) : "none")
                + ", remaining=" + remaining() + "}";
    }
}
