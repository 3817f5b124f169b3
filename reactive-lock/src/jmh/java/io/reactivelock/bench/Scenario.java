package io.reactivelock.bench;

/**
 * U1 and U64: {@code workers} sequential chains of acquire+release, each on its own lock, with an
 * empty body. C16: {@code workers} chains on one lock, each body hopping threads while an
 * occupancy detector watches for overlaps.
 */
enum Scenario {
    U1(1, false, "one worker, its own lock, sequential acquire+release pairs, empty body"),
    U64(64, false, "64 concurrent chains, each on its own lock, empty body"),
    C16(16, true, "16 workers on ONE lock; the critical section hops threads under an occupancy detector");

    final int workers;
    final boolean contended;
    final String description;

    Scenario(int workers, boolean contended, String description) {
        this.workers = workers;
        this.contended = contended;
        this.description = description;
    }
}
