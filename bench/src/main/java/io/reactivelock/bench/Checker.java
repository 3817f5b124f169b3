package io.reactivelock.bench;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts, per name, who is inside a critical section of one cell and tells, on entry, whether
 * the entrant's kind allows what it finds there: an exclusive holder or a writer must be alone,
 * a reader must find no writer, a permit holder must not take the holders above the capacity.
 *
 * <p>One atomic counter per name, in which a writer weighs {@link #WRITER} and everyone else 1,
 * so each entry sees every holder that entered before it and has not left: an overlap is counted
 * by whichever of the two enters second. Holders leave before their release is sent, so a correct
 * primitive never trips it.
 */
final class Checker {

    /** A writer's weight: more than any number of readers a cell has. */
    static final int WRITER = 1 << 16;

    private final Map<String, AtomicInteger> holders = new ConcurrentHashMap<>();

    /** Enters {@code a}'s names; false if any of them holds what {@code a}'s kind does not allow. */
    boolean enter(Workload.Acquisition a) {
        boolean allowed = true;
        for (String name : a.names()) {
            int now = counter(name).addAndGet(weight(a));
            allowed &= switch (a.kind()) {
                case EXCLUSIVE -> now == 1;
                case PERMIT -> now <= a.capacity();
                case READ -> now < WRITER;
                case WRITE -> now == WRITER;
            };
        }
        return allowed;
    }

    void leave(Workload.Acquisition a) {
        for (String name : a.names()) {
            counter(name).addAndGet(-weight(a));
        }
    }

    private AtomicInteger counter(String name) {
        return holders.computeIfAbsent(name, n -> new AtomicInteger());
    }

    private static int weight(Workload.Acquisition a) {
        return a.kind() == Workload.Kind.WRITE ? WRITER : 1;
    }
}
