package io.reactivelock.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * What the workers of a cell take: the lock, or one of the primitives. Each worker draws its
 * {@link Acquisition}s at random from its {@link #choices}; the contender's instance takes what
 * one names and the {@link Checker} counts it against what its kind allows.
 */
enum Workload {
    /** The lock of one name. */
    LOCK,
    /** One permit of a semaphore name. */
    PERMITS,
    /** The read lock of one name. */
    READ,
    /** The write lock of one name. */
    WRITE,
    /** The read lock of one name 9 times in 10, its write lock once. */
    READ_WRITE,
    /** Several names at once: 3 of a worker's own, or 2 or 3 of 6 shared names in random order when contended. */
    LOCKS,
    /** As {@link #LOCKS}, each acquisition listing its names in one order for all (sorted). */
    LOCKS_SORTED;

    /** Semaphore capacity in a contended cell; an uncontended one has capacity 1. */
    static final int CONTENDED_CAPACITY = 4;
    /** Of every 10 acquisitions of {@link #READ_WRITE}, how many are writes. */
    static final int WRITES_IN_10 = 1;
    /** Names a contended {@link #LOCKS} cell draws from. */
    static final int SHARED_NAMES = 6;
    /** Names of each acquisition of an uncontended {@link #LOCKS} cell. */
    static final int OWN_NAMES = 3;

    /** What the {@link Checker} holds the workers of a contended cell to, in a few words. */
    String rule() {
        return switch (this) {
            case LOCK -> "one holder at a time";
            case PERMITS -> "never more holders than the capacity";
            case READ, WRITE, READ_WRITE -> "no reader while a writer holds it, one writer at a time";
            case LOCKS, LOCKS_SORTED -> "one holder per name";
        };
    }

    /** How an acquisition holds its names, which decides what the checker allows. */
    enum Kind {
        /** Each name alone. */
        EXCLUSIVE,
        /** One permit of the name's capacity. */
        PERMIT,
        /** With other readers, without a writer. */
        READ,
        /** Alone: no reader, no other writer. */
        WRITE
    }

    /** One take: its kind, its names in the order the caller lists them, and the capacity of a semaphore name. */
    record Acquisition(Kind kind, List<String> names, int capacity) {
        String name() {
            return names.get(0);
        }
    }

    /**
     * What a worker whose key is {@code key} (the cell's one key when {@code contended}, else the
     * worker's own) draws from, uniformly: a list with repeats where some take is more likely.
     */
    List<Acquisition> choices(String key, boolean contended) {
        return switch (this) {
            case LOCK -> List.of(new Acquisition(Kind.EXCLUSIVE, List.of(key), 1));
            case PERMITS -> List.of(new Acquisition(Kind.PERMIT, List.of(key), contended ? CONTENDED_CAPACITY : 1));
            case READ -> List.of(new Acquisition(Kind.READ, List.of(key), 1));
            case WRITE -> List.of(new Acquisition(Kind.WRITE, List.of(key), 1));
            case READ_WRITE -> {
                List<Acquisition> mix = new ArrayList<>(Collections.nCopies(10 - WRITES_IN_10,
                        new Acquisition(Kind.READ, List.of(key), 1)));
                mix.addAll(Collections.nCopies(WRITES_IN_10, new Acquisition(Kind.WRITE, List.of(key), 1)));
                yield List.copyOf(mix);
            }
            case LOCKS, LOCKS_SORTED -> contended
                    ? selections(key, this == LOCKS_SORTED)
                    : List.of(new Acquisition(Kind.EXCLUSIVE, names(key, OWN_NAMES), 1));
        };
    }

    /**
     * Every ordered selection of 2 or 3 of the {@link #SHARED_NAMES} names (30 + 120: a fifth take
     * two), each one's names {@code sorted} or in the selection's order.
     */
    private static List<Acquisition> selections(String key, boolean sorted) {
        List<String> names = names(key, SHARED_NAMES);
        List<Acquisition> out = new ArrayList<>();
        for (String a : names) {
            for (String b : names) {
                if (b.equals(a)) {
                    continue;
                }
                out.add(exclusive(sorted, a, b));
                for (String c : names) {
                    if (!c.equals(a) && !c.equals(b)) {
                        out.add(exclusive(sorted, a, b, c));
                    }
                }
            }
        }
        return List.copyOf(out);
    }

    private static Acquisition exclusive(boolean sorted, String... names) {
        return new Acquisition(Kind.EXCLUSIVE, sorted ? Arrays.stream(names).sorted().toList() : List.of(names), 1);
    }

    private static List<String> names(String key, int count) {
        List<String> names = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            names.add(key + ":" + i);
        }
        return List.copyOf(names);
    }
}
