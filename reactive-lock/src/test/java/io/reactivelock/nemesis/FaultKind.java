package io.reactivelock.nemesis;

/** The faults the nemesis injects, each with the words the report uses for it. */
enum FaultKind {
    REDIS_RESTART_EMPTY("lock Redis killed (SIGKILL) and restarted empty", true),
    REDIS_PAUSE("lock Redis frozen (SIGSTOP, then SIGCONT)", false),
    SCRIPT_FLUSH("SCRIPT FLUSH on the lock Redis", false),
    CLIENT_KILL("CLIENT KILL of the lock Redis' client connections", false),
    PROXY_LATENCY("proxy latency, each way", false),
    PROXY_DROP("proxy drops replies, then cuts the connections", false),
    PROXY_FREEZE("proxy holds all traffic, then delivers it", false),
    PROXY_CUT("proxy cuts every connection and refuses new ones", false),
    CLIENT_PAUSE("a client JVM frozen (SIGSTOP, then SIGCONT)", false);

    private final String description;
    private final boolean losesLocks;

    FaultKind(String description, boolean losesLocks) {
        this.description = description;
        this.losesLocks = losesLocks;
    }

    String description() {
        return description;
    }

    /** Whether the lock Redis forgets the locks it held: then the promise of exclusion is void. */
    boolean losesLocks() {
        return losesLocks;
    }

    String label() {
        return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }
}
