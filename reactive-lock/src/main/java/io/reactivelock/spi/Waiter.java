package io.reactivelock.spi;

/**
 * A store's handle on one acquisition while it waits for the lock: what a store that can wake a
 * waiter early (a release notice) or give it the lock directly (a hand-off) may do from outside
 * an attempt. Every method may be called from any thread and never blocks.
 */
public interface Waiter {

    /** Whether the acquisition has ended (its subscriber left, or it holds or gave up the lock): a late reply for it must be released. */
    boolean hasEnded();

    /**
     * A release was announced: ends the current pause at once; if none is under way (an attempt is
     * in flight), the next pause is skipped instead.
     */
    void wake();

    /** Ends the current pause at once and returns true, or returns false if none is under way. */
    boolean wakeIfPaused();

    /** Called before a holder sends a hand-off to this acquisition: from then on its end releases, whatever happens. */
    void expectHandOff();

    /**
     * The hand-off succeeded: gives this acquisition the lock with {@code fencingToken}, by a command
     * sent at {@code sentAtNanos} ({@link System#nanoTime()}); released again if the acquisition has ended.
     */
    void handOver(long fencingToken, long sentAtNanos);

    /**
     * The hand-off's outcome is unknown (its command failed): an acquisition that has ended releases
     * whatever it may have been handed; one still waiting tries again at once, which with its token
     * takes back a lock handed to it.
     */
    void handOffUnknown();
}
