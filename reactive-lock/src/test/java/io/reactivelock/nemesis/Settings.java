package io.reactivelock.nemesis;

import java.time.Duration;

/**
 * How a nemesis run is shaped, from system properties ({@code -Dnemesis.duration=PT10M} and so on;
 * the {@code soak} Maven profile sets the long defaults).
 *
 * @param duration how long the nemesis injects faults while the clients work
 * @param extension how much longer it may go on until the negative control has caught a stale write
 *     during a client freeze (a short run may freeze no writer at the right moment); zero: never
 * @param clients client JVMs
 * @param instances locks per client JVM (half non-fair, half fair; even, at least 2)
 * @param workers concurrent chains of operations per client JVM
 * @param hot hot lock names, shared by every client
 * @param cold cold lock names
 * @param seed seed of the nemesis' schedule (the clients' choices are not seeded: timing decides anyway)
 * @param slack what the bounds on time (acquire timeout, renewals, cleanup) allow for a loaded machine; a body past
 *     its lease has guarantee 2's bound instead ({@link Checker#TOLD_LATE_MILLIS})
 */
record Settings(Duration duration, Duration extension, int clients, int instances, int workers, int hot, int cold, long seed,
        Duration slack) {

    Settings {
        if (instances < 2 || instances % 2 != 0) {
            throw new IllegalArgumentException("nemesis.instances must be even and at least 2, not " + instances);
        }
        if (clients < 2 || workers < 1 || hot < 1 || cold < 1) {
            throw new IllegalArgumentException("nemesis.clients >= 2, workers, hot and cold >= 1");
        }
    }

    /** The run the test makes: {@code nemesis.duration} (default {@code fallback}) and the other properties. */
    static Settings fromSystemProperties(Duration fallback) {
        return new Settings(
                Duration.parse(System.getProperty("nemesis.duration", fallback.toString())),
                Duration.parse(System.getProperty("nemesis.extension", "PT40S")),
                Integer.getInteger("nemesis.clients", 4),
                Integer.getInteger("nemesis.instances", 4),
                Integer.getInteger("nemesis.workers", 6),
                Integer.getInteger("nemesis.hot", 3),
                Integer.getInteger("nemesis.cold", 200),
                Long.getLong("nemesis.seed", System.nanoTime()),
                Duration.parse(System.getProperty("nemesis.slack", "PT2S")));
    }
}
