package io.reactivelock;

/**
 * The kinds of lock this library offers, as a {@link LockListener} may tell them apart
 * ({@link LockListener#forPrimitive}); {@link #tag()} is the name metrics use.
 */
public enum Primitive {

    /** {@link ReactiveLock}: the Redis lock, fair or not, {@code ReactiveRedlock}, the in-memory lock. */
    LOCK("lock"),
    /** {@link ReactiveSemaphore}. */
    SEMAPHORE("semaphore"),
    /** {@link ReactiveReadWriteLock}, readers and writers alike. */
    READ_WRITE_LOCK("read-write-lock"),
    /** {@link ReactiveMultiLock}. */
    MULTI_LOCK("multi-lock");

    private final String tag;

    Primitive(String tag) {
        this.tag = tag;
    }

    /** The lowercase name of the kind, as a metric tag value. */
    public String tag() {
        return tag;
    }
}
