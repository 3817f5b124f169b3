package io.reactivelock.nemesis;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.awaitility.Awaitility.await;

import io.reactivelock.nemesis.History.Fault;
import io.reactivelock.support.RedisSentinelSet;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.TcpProxy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The fault injector of a nemesis run: four lanes, each a thread that waits a random gap, injects
 * one random fault of its own kinds for a random time, heals it and starts over, so that faults of
 * different lanes overlap at random.
 * <ul>
 *   <li>the lock Redis: killed and restarted empty, frozen, {@code SCRIPT FLUSH}, {@code CLIENT KILL};
 *   <li>the network, at the proxy every client connects through: latency, replies dropped (then
 *       the connections cut, as a real network failure would end), traffic frozen, connections cut
 *       and refused;
 *   <li>the Sentinel-watched lock Redis: {@code SENTINEL FAILOVER} to its replica while the master is
 *       up, as an operator would; the clients stay on the old master until the Sentinels demote it
 *       (some ten seconds later), and what it granted after the replica's promotion is lost then;
 *   <li>the clients: one JVM frozen, preferably one about to write under a lock on a hot name, then
 *       past the longest TTL (so that the freeze lands between its read and its write and its lease
 *       runs out: Martin Kleppmann's paused client, where a stale holder does harm).
 * </ul>
 * Every fault is logged with its start and end. Lanes run on platform threads of their own and
 * may block; {@link #stopAndHeal()} ends the faults under way and heals everything.
 */
final class Nemesis {

    /** The clients the nemesis may freeze, and which of them is about to write under a lock. */
    interface Clients {
        List<String> names();

        long pid(String client);

        /**
         * The client with the most writes due at least {@code after} nanoseconds from now, counting
         * those on hot names first (where another holder is likely to come while it is frozen); null
         * if none has any.
         */
        String aboutToWrite(long after);
    }

    private static final Duration SHORTEST_GAP = Duration.ofMillis(500);
    private static final Duration LONGEST_GAP = Duration.ofMillis(3000);
    /** Client freezes come more often: a frozen holder is the one fault that fencing alone must absorb. */
    private static final Duration LONGEST_CLIENT_GAP = Duration.ofMillis(1500);
    /** The first failover comes early, so that a short run has one. */
    private static final Duration LONGEST_FIRST_FAILOVER_GAP = Duration.ofMillis(2000);
    /** Between failovers, which last some ten seconds each, the Sentinel's names get long spells without a fault. */
    private static final Duration SHORTEST_FAILOVER_GAP = Duration.ofSeconds(5);
    private static final Duration LONGEST_FAILOVER_GAP = Duration.ofSeconds(30);
    private static final Duration DEMOTION_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration LANE_STOP_TIMEOUT = Duration.ofSeconds(120);

    private final RedisServer redis;
    private final TcpProxy proxy;
    private final RedisSentinelSet sentinels;
    private final Clients clients;
    private final LongSupplier clock;
    private final long seed;
    private final CountDownLatch stop = new CountDownLatch(1);
    private final List<Fault> faults = new ArrayList<>();
    private final List<Thread> lanes = new ArrayList<>();
    private final List<RuntimeException> failures = new ArrayList<>();
    /** The master the nemesis last saw the Sentinels name, and when (the run's time). */
    private RedisServer sentinelMaster;
    private long sentinelMasterSeen;

    /** A nemesis over these targets; {@code clock} gives the run's time, in nanoseconds since its origin. */
    Nemesis(RedisServer redis, TcpProxy proxy, RedisSentinelSet sentinels, Clients clients, LongSupplier clock, long seed) {
        this.redis = redis;
        this.proxy = proxy;
        this.sentinels = sentinels;
        this.clients = clients;
        this.clock = clock;
        this.seed = seed;
    }

    /** Starts the four lanes. */
    void start() {
        sentinelMaster = sentinels.currentMaster();
        sentinelMasterSeen = clock.getAsLong();
        Gap gap = (random, first) -> between(random, SHORTEST_GAP, LONGEST_GAP);
        lane("nemesis-redis", 1, gap, random -> pick(random, FaultKind.REDIS_RESTART_EMPTY, FaultKind.REDIS_PAUSE,
                FaultKind.SCRIPT_FLUSH, FaultKind.CLIENT_KILL));
        lane("nemesis-network", 2, gap, random -> pick(random, FaultKind.PROXY_LATENCY, FaultKind.PROXY_DROP,
                FaultKind.PROXY_FREEZE, FaultKind.PROXY_CUT));
        lane("nemesis-clients", 3, (random, first) -> between(random, SHORTEST_GAP, LONGEST_CLIENT_GAP),
                random -> FaultKind.CLIENT_PAUSE);
        lane("nemesis-sentinel", 4, (random, first) -> first ? between(random, SHORTEST_GAP, LONGEST_FIRST_FAILOVER_GAP)
                : between(random, SHORTEST_FAILOVER_GAP, LONGEST_FAILOVER_GAP), random -> FaultKind.SENTINEL_FAILOVER);
    }

    /**
     * Ends the faults under way (each lane heals its own), waits for the lanes, and heals
     * everything once more; throws what a lane failed with.
     */
    void stopAndHeal() throws InterruptedException {
        stop.countDown();
        for (Thread lane : lanes) {
            // A failover under way ends when the Sentinels have demoted the old master.
            lane.join(LANE_STOP_TIMEOUT.toMillis());
        }
        noticeFailoverNotInjected();
        proxy.latency(Duration.ZERO);
        proxy.unfreeze();
        proxy.refuseConnections(false);
        proxy.dropReplies(false);
        redis.resume();
        if (!redis.isRunning()) {
            redis.restart();
        }
        for (String client : clients.names()) {
            try {
                signal(clients.pid(client), "CONT");
            } catch (IllegalStateException gone) {
                // The JVM died; the run reports that.
            }
        }
        synchronized (failures) {
            if (!failures.isEmpty()) {
                throw failures.get(0);
            }
        }
    }

    /** Whether a lane failed (it stopped; {@link #stopAndHeal()} throws what it failed with). */
    boolean failed() {
        synchronized (failures) {
            return !failures.isEmpty();
        }
    }

    /** The faults injected so far, in the order they started. */
    List<Fault> faults() {
        synchronized (faults) {
            List<Fault> inOrder = new ArrayList<>(faults);
            inOrder.sort(Comparator.comparingLong(Fault::start));
            return inOrder;
        }
    }

    private interface Chooser {
        FaultKind next(Random random);
    }

    private interface Gap {
        Duration next(Random random, boolean first);
    }

    private void lane(String name, int index, Gap gap, Chooser chooser) {
        Random random = new Random(seed * 31 + index);
        Thread lane = new Thread(() -> {
            try {
                boolean first = true;
                while (!hold(gap.next(random, first))) {
                    first = false;
                    inject(chooser.next(random), random);
                }
            } catch (RuntimeException e) {
                synchronized (failures) {
                    failures.add(e);
                }
            }
        }, name);
        lane.setDaemon(true);
        lanes.add(lane);
        lane.start();
    }

    private void inject(FaultKind kind, Random random) {
        long start = clock.getAsLong();
        switch (kind) {
            case REDIS_RESTART_EMPTY -> {
                Duration down = between(random, Duration.ofMillis(100), Duration.ofMillis(1500));
                redis.kill();
                try {
                    hold(down);
                } finally {
                    redis.restart();
                }
                record(kind, "lock-redis", start, "down " + down.toMillis() + " ms");
            }
            case REDIS_PAUSE -> {
                redis.pause();
                try {
                    hold(between(random, Duration.ofMillis(200), Duration.ofMillis(3000)));
                } finally {
                    redis.resume();
                }
                record(kind, "lock-redis", start, "");
            }
            case SCRIPT_FLUSH -> {
                redis.call("SCRIPT", "FLUSH");
                record(kind, "lock-redis", start, "");
            }
            case CLIENT_KILL -> {
                String type = random.nextBoolean() ? "normal" : "pubsub";
                String killed = redis.call("CLIENT", "KILL", "TYPE", type);
                record(kind, "lock-redis", start, killed + " " + type + " connection(s)");
            }
            case PROXY_LATENCY -> {
                Duration oneWay = between(random, Duration.ofMillis(5), Duration.ofMillis(60));
                proxy.latency(oneWay);
                try {
                    hold(between(random, Duration.ofMillis(1000), Duration.ofMillis(5000)));
                } finally {
                    proxy.latency(Duration.ZERO);
                }
                record(kind, "proxy", start, oneWay.toMillis() + " ms each way");
            }
            case PROXY_DROP -> {
                proxy.dropReplies(true);
                try {
                    hold(between(random, Duration.ofMillis(200), Duration.ofMillis(1500)));
                } finally {
                    // Cut before replies flow again: a connection that lost a reply must not carry the next one.
                    proxy.refuseConnections(true);
                    proxy.cutConnections();
                    proxy.dropReplies(false);
                    proxy.refuseConnections(false);
                }
                record(kind, "proxy", start, "");
            }
            case PROXY_FREEZE -> {
                proxy.freeze();
                try {
                    hold(between(random, Duration.ofMillis(200), Duration.ofMillis(3000)));
                } finally {
                    proxy.unfreeze();
                }
                record(kind, "proxy", start, "");
            }
            case PROXY_CUT -> {
                proxy.refuseConnections(true);
                proxy.cutConnections();
                try {
                    hold(between(random, Duration.ofMillis(100), Duration.ofMillis(1500)));
                } finally {
                    proxy.refuseConnections(false);
                }
                record(kind, "proxy", start, "");
            }
            case SENTINEL_FAILOVER -> {
                noticeFailoverNotInjected();
                RedisServer old = sentinels.currentMaster();
                long sent = sentinels.failOver();
                long begun = clock.getAsLong() - (System.nanoTime() - sent);
                long promoted = clock.getAsLong();
                awaitDemoted(old);
                record(kind, "sentinel", begun, String.format(Locale.ROOT, "master :%d replaced after %.1f s, demoted after"
                        + " %.1f s", old.port(), (promoted - begun) / 1e9, (clock.getAsLong() - begun) / 1e9));
                synchronized (this) {
                    sentinelMaster = sentinels.currentMaster();
                    sentinelMasterSeen = clock.getAsLong();
                }
            }
            case CLIENT_PAUSE -> {
                String target = clients.aboutToWrite(Duration.ofMillis(20).toNanos());
                boolean writer = target != null;
                if (!writer) {
                    target = clients.names().get(random.nextInt(clients.names().size()));
                }
                long pid = clients.pid(target);
                long pauseStart = clock.getAsLong();
                signal(pid, "STOP");
                try {
                    // A writer is frozen past the longest TTL, so that its lease runs out and another holder may come.
                    hold(between(random, writer ? Duration.ofMillis(2000) : Duration.ofMillis(300), Duration.ofMillis(3500)));
                } finally {
                    signal(pid, "CONT");
                }
                record(kind, target, pauseStart, writer ? "about to write" : "");
            }
            default -> throw new IllegalStateException("no injection for " + kind);
        }
    }

    /**
     * Records as a fault a failover the Sentinels made on their own since the nemesis last looked
     * (their master unanswered for a second on a loaded machine, say): from that look until the
     * old master is demoted.
     */
    private synchronized void noticeFailoverNotInjected() {
        RedisServer now = sentinels.currentMaster();
        if (now != sentinelMaster) {
            awaitDemoted(sentinelMaster);
            record(FaultKind.SENTINEL_FAILOVER, "sentinel", sentinelMasterSeen, "not injected: the Sentinels failed over"
                    + " on their own from :" + sentinelMaster.port());
            sentinelMaster = now;
        }
        sentinelMasterSeen = clock.getAsLong();
    }

    /** Waits until the Sentinels have made {@code old} a replica of the new master, in sync. */
    private static void awaitDemoted(RedisServer old) {
        await("the Sentinels to demote the old master " + old).atMost(DEMOTION_TIMEOUT).pollInterval(Duration.ofMillis(50))
                .ignoreExceptions()
                .until(() -> {
                    String replication = old.call("INFO", "replication");
                    return replication.contains("role:slave") && replication.contains("master_link_status:up");
                });
    }

    private void record(FaultKind kind, String target, long start, String detail) {
        synchronized (faults) {
            faults.add(new Fault(kind, target, start, clock.getAsLong(), detail));
        }
    }

    /** Waits for {@code duration} or until stopped; returns whether stopped. */
    private boolean hold(Duration duration) {
        try {
            return stop.await(duration.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return true;
        }
    }

    private static Duration between(Random random, Duration shortest, Duration longest) {
        return Duration.ofMillis(shortest.toMillis() + (long) (random.nextDouble() * (longest.toMillis() - shortest.toMillis())));
    }

    private static FaultKind pick(Random random, FaultKind... kinds) {
        return kinds[random.nextInt(kinds.length)];
    }

    /** Sends a signal through the shell's {@code kill}: Java itself sends only SIGTERM and SIGKILL. */
    static void signal(long pid, String signal) {
        List<String> argv = List.of("/bin/sh", "-c", "kill -s " + signal + " " + pid);
        try {
            Process process = new ProcessBuilder(argv).redirectErrorStream(true).start();
            String output = new String(process.getInputStream().readAllBytes(), UTF_8);
            if (process.waitFor() != 0) {
                throw new IllegalStateException(String.join(" ", argv) + " failed: " + output);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("could not run " + String.join(" ", argv), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running " + String.join(" ", argv), e);
        }
    }
}
