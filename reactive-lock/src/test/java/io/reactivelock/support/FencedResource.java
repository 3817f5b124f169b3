package io.reactivelock.support;

import java.util.ArrayList;
import java.util.List;

/**
 * A resource protected by fencing tokens, as a storage service should be: it accepts a write only
 * if its token is above the last one it accepted, and rejects every other. With {@code fencing}
 * off it accepts everything, which is the negative control: what a resource without fencing lets
 * a stale lock holder do. Thread-safe.
 */
public final class FencedResource {

    private final boolean fencing;
    private long lastAccepted = Long.MIN_VALUE;
    private final List<String> accepted = new ArrayList<>();
    private final List<String> rejected = new ArrayList<>();

    private FencedResource(boolean fencing) {
        this.fencing = fencing;
    }

    /** A resource that rejects writes whose fencing token is not above the last accepted one. */
    public static FencedResource fenced() {
        return new FencedResource(true);
    }

    /** A resource that accepts every write, whatever its token: the negative control. */
    public static FencedResource unfenced() {
        return new FencedResource(false);
    }

    /** Writes {@code value} if {@code fencingToken} allows it; returns whether it was accepted. */
    public synchronized boolean write(long fencingToken, String value) {
        if (fencing && fencingToken <= lastAccepted) {
            rejected.add(value);
            return false;
        }
        lastAccepted = Math.max(lastAccepted, fencingToken);
        accepted.add(value);
        return true;
    }

    /** The last value written, or {@code null} if none. */
    public synchronized String value() {
        return accepted.isEmpty() ? null : accepted.get(accepted.size() - 1);
    }

    /** The accepted values, in the order they were written. */
    public synchronized List<String> accepted() {
        return List.copyOf(accepted);
    }

    /** The rejected values, in the order they were attempted. */
    public synchronized List<String> rejected() {
        return List.copyOf(rejected);
    }
}
