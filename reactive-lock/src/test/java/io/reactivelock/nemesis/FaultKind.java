package io.reactivelock.nemesis;

/** The faults the nemesis injects, each with the words the report uses for it and the names it reaches. */
enum FaultKind {
    REDIS_RESTART_EMPTY("lock Redis killed (SIGKILL) and restarted empty", Reach.PROXIED, true),
    REDIS_PAUSE("lock Redis frozen (SIGSTOP, then SIGCONT)", Reach.PROXIED, false),
    SCRIPT_FLUSH("SCRIPT FLUSH on the lock Redis", Reach.PROXIED, false),
    CLIENT_KILL("CLIENT KILL of the lock Redis' client connections", Reach.PROXIED, false),
    PROXY_LATENCY("proxy latency, each way", Reach.PROXIED, false),
    PROXY_DROP("proxy drops replies, then cuts the connections", Reach.PROXIED, false),
    PROXY_FREEZE("proxy holds all traffic, then delivers it", Reach.PROXIED, false),
    PROXY_CUT("proxy cuts every connection and refuses new ones", Reach.PROXIED, false),
    SENTINEL_FAILOVER("SENTINEL FAILOVER of the Sentinel-watched Redis, from the command until the Sentinels have demoted"
            + " the old master (which kills its clients' connections)", Reach.SENTINEL, true),
    CLIENT_PAUSE("a client JVM frozen (SIGSTOP, then SIGCONT)", Reach.CLIENT, false);

    /** What a fault reaches: the names on the proxied lock Redis, those on the Sentinel-watched one, or one client. */
    enum Reach { PROXIED, SENTINEL, CLIENT }

    private final String description;
    private final Reach reach;
    private final boolean losesLocks;

    FaultKind(String description, Reach reach, boolean losesLocks) {
        this.description = description;
        this.reach = reach;
        this.losesLocks = losesLocks;
    }

    String description() {
        return description;
    }

    /**
     * Whether a fault of this kind reaches {@code name} of {@code client} (a client's freeze: its
     * own operations; the others: the names on the lock server they act on); {@code target} is the
     * fault's.
     */
    boolean reaches(String target, String name, String client) {
        return switch (reach) {
            case PROXIED -> !NemesisClient.viaSentinel(name);
            case SENTINEL -> NemesisClient.viaSentinel(name);
            case CLIENT -> target.equals(client);
        };
    }

    /** Whether the lock server it acts on may forget the locks it held: then the promise of exclusion is void. */
    boolean losesLocks() {
        return losesLocks;
    }

    String label() {
        return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }
}
