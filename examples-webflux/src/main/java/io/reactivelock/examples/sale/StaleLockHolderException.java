package io.reactivelock.examples.sale;

/**
 * The database refused a write because its fencing token is not above the last one it applied:
 * the writer's lock lease ended (it paused past its TTL, or Redis lost the key) and a newer holder
 * has written since. Nothing was written: 409, the client may retry.
 */
public final class StaleLockHolderException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final long fence;
    private final long lastFence;

    public StaleLockHolderException(String sku, long fence, long lastFence) {
        super("Write to SKU '" + sku + "' with fencing token " + fence + " rejected: the database already applied token "
                + lastFence + " from a newer holder of the lock");
        this.fence = fence;
        this.lastFence = lastFence;
    }

    /** The rejected token. */
    public long fence() {
        return fence;
    }

    /** The token of the last write the database applied. */
    public long lastFence() {
        return lastFence;
    }
}
