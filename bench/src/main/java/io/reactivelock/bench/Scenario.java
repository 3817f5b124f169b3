package io.reactivelock.bench;

import java.util.Arrays;
import java.util.List;

/**
 * U1 and U64: {@code workers} sequential chains of acquire+release, each on its own lock, with an
 * empty body. The C16 cells: 16 workers on one lock, each body hopping threads under an overlap
 * detector; they differ in where the lock is handed off: between workers of one instance, between
 * instances (each with its own client), or between JVMs. The primitives' cells ({@link #primitives()},
 * {@code -Dbench.scenarios=primitives}): the same two shapes, one worker on names of its own and
 * 16 workers through one shared instance under a {@link Checker}, for the semaphore, the
 * read-write lock and the multi-lock.
 */
enum Scenario {
    U1(1, false, 1, 1, "uncontended", "one worker, its own lock, sequential acquire+release pairs, empty body"),
    U64(64, false, 1, 1, "uncontended", "64 concurrent chains, each on its own lock, empty body"),
    C16(16, true, 1, 1, "in-process hand-off",
            "16 workers on ONE lock through ONE shared instance of the contender (one client, one registry):"
                    + " the lock passes between workers of one process"),
    C16I(16, true, 16, 1, "cross-instance hand-off, one JVM",
            "16 workers on ONE lock, each through its OWN instance (own client and connections, own registry),"
                    + " as 16 separate processes would be, all in this JVM"),
    C16X(16, true, 1, 4, "cross-process hand-off",
            "16 workers on ONE lock in 4 forked JVMs, 4 workers per JVM sharing that JVM's one instance:"
                    + " the lock passes between processes (and between workers of one process)"),
    SEM_U1(Workload.PERMITS, 1, false, "uncontended semaphore",
            "one worker, its own semaphore name of capacity 1, sequential pairs taking 1 permit, empty body"),
    SEM_C16(Workload.PERMITS, 16, true, "contended semaphore",
            "16 workers on ONE semaphore name of capacity " + Workload.CONTENDED_CAPACITY + ", 1 permit each, through"
                    + " one shared instance; the checker counts holders against the capacity"),
    RW_U1_READ(Workload.READ, 1, false, "uncontended read lock",
            "one worker, its own read-write lock, sequential read lock pairs, empty body"),
    RW_U1_WRITE(Workload.WRITE, 1, false, "uncontended write lock",
            "one worker, its own read-write lock, sequential write lock pairs, empty body"),
    RW_C16(Workload.READ_WRITE, 16, true, "contended read-write lock",
            "16 workers on ONE read-write lock through one shared instance, each acquisition a read with"
                    + " probability 0.9 and a write with 0.1; the checker allows no reader with a writer and one writer at a time"),
    MULTI_U1(Workload.LOCKS, 1, false, "uncontended multi-lock",
            "one worker, " + Workload.OWN_NAMES + " names of its own taken together, sequential pairs, empty body"),
    MULTI_C16(Workload.LOCKS, 16, true, "contended multi-lock",
            "16 workers through one shared instance, each acquisition 2 or 3 of " + Workload.SHARED_NAMES
                    + " shared names in random order (every ordered selection equally likely, so a fifth take two);"
                    + " the checker allows one holder per name"),
    MULTI_C16_SORTED(Workload.LOCKS_SORTED, 16, true, "contended multi-lock, names in one order",
            "as MULTI_C16, but every acquisition lists its names sorted (one order for all callers, as a user of an"
                    + " order-dependent multi-lock must to rule out deadlock)");

    /** What the workers take. */
    final Workload workload;
    final int workers;
    /** All workers on one lock name. */
    final boolean contended;
    /** Instances of the contender in each JVM. */
    final int instances;
    final int jvms;
    /** What kind of hand-off the cell measures, for the reader. */
    final String measures;
    final String description;

    Scenario(int workers, boolean contended, int instances, int jvms, String measures, String description) {
        this(Workload.LOCK, workers, contended, instances, jvms, measures, description);
    }

    /** A primitive's cell: in this JVM, through one instance. */
    Scenario(Workload workload, int workers, boolean contended, String measures, String description) {
        this(workload, workers, contended, 1, 1, measures, description);
    }

    Scenario(Workload workload, int workers, boolean contended, int instances, int jvms, String measures,
            String description) {
        this.workload = workload;
        this.workers = workers;
        this.contended = contended;
        this.instances = instances;
        this.jvms = jvms;
        this.measures = measures;
        this.description = description;
    }

    /** Workers, instances and JVMs in a few words. */
    String shape() {
        if (jvms > 1) {
            return workers + " workers in " + jvms + " JVMs, one instance per JVM";
        }
        if (workers == 1) {
            return "1 worker, one instance";
        }
        return workers + " workers, " + (instances == 1 ? "one shared instance" : "one instance per worker");
    }

    int workersPerJvm() {
        return workers / jvms;
    }

    /** True for the cells of the semaphore, the read-write lock and the multi-lock. */
    boolean primitive() {
        return workload != Workload.LOCK;
    }

    /** What one operation of the cell is: an acquire+release pair, or (contended) an acquisition or a hand-off. */
    String op() {
        return !contended ? "pair" : primitive() ? "acquisition" : "hand-off";
    }

    /** What the cell's throughput counts. */
    String unit() {
        return op() + "s/s";
    }

    /** The primitives' cells, in table order: what {@code -Dbench.scenarios=primitives} runs. */
    static List<Scenario> primitives() {
        return Arrays.stream(values()).filter(Scenario::primitive).toList();
    }
}
