package io.reactivelock.bench;

/**
 * U1 and U64: {@code workers} sequential chains of acquire+release, each on its own lock, with an
 * empty body. The C16 cells: 16 workers on one lock, each body hopping threads under an overlap
 * detector; they differ in where the lock is handed off: between workers of one instance, between
 * instances (each with its own client), or between JVMs.
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
                    + " the lock passes between processes (and between workers of one process)");

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
}
