package io.reactivelock.support;

import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisURI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.awaitility.core.ConditionTimeoutException;

/**
 * A master, one replica and three Sentinels (quorum 2) watching them as {@value #MASTER_NAME}, all
 * {@code redis-server} processes on 127.0.0.1. {@link #start} returns once the replica is in sync and every
 * Sentinel knows the replica and the two other Sentinels.
 *
 * <p>Every method blocks; call them from the test thread, never from a reactive pipeline. {@link #close()}
 * stops every process.
 */
public final class RedisSentinelSet implements AutoCloseable {

    /** The name under which the Sentinels monitor the master. */
    public static final String MASTER_NAME = "mymaster";

    private static final Duration SETTLE_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration POLL_INTERVAL = Duration.ofMillis(50);
    private static final Duration FAILOVER_TIMEOUT = Duration.ofSeconds(60);
    private static final int ATTEMPT_SECONDS = 10;

    private final RedisServer master;
    private final RedisServer replica;
    private final List<RedisServer> sentinels;

    private RedisSentinelSet(RedisServer master, RedisServer replica, List<RedisServer> sentinels) {
        this.master = master;
        this.replica = replica;
        this.sentinels = sentinels;
    }

    /** Starts the master, the replica and the Sentinels, and waits until they all know each other. */
    public static RedisSentinelSet start() {
        List<RedisServer> started = new ArrayList<>();
        try {
            RedisServer master = RedisServer.start();
            started.add(master);
            RedisServer replica = RedisServer.start("--replicaof", master.host(), Integer.toString(master.port()));
            started.add(replica);
            String config = String.join("\n",
                    "sentinel monitor " + MASTER_NAME + " " + master.host() + " " + master.port() + " 2",
                    "sentinel down-after-milliseconds " + MASTER_NAME + " 1000",
                    "sentinel failover-timeout " + MASTER_NAME + " 10000", "");
            List<RedisServer> sentinels = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                RedisServer sentinel = RedisServer.start(config, List.of("--sentinel"));
                started.add(sentinel);
                sentinels.add(sentinel);
            }
            RedisSentinelSet set = new RedisSentinelSet(master, replica, List.copyOf(sentinels));
            await("the replica to sync and the Sentinels to find it and each other").atMost(SETTLE_TIMEOUT)
                    .pollInterval(POLL_INTERVAL).ignoreExceptions()
                    .until(() -> replica.call("INFO", "replication").contains("master_link_status:up")
                            && sentinels.stream().allMatch(sentinel ->
                                    sentinel.callList("SENTINEL", "REPLICAS", MASTER_NAME).size() == 1
                                            && sentinel.callList("SENTINEL", "SENTINELS", MASTER_NAME).size() == 2));
            return set;
        } catch (RuntimeException e) {
            started.forEach(RedisServer::close);
            throw e;
        }
    }

    /** The master as started (see {@link #currentMaster()}). */
    public RedisServer master() {
        return master;
    }

    /** The replica as started. */
    public RedisServer replica() {
        return replica;
    }

    /** The Sentinel URI of the master, naming all three Sentinels. */
    public RedisURI uri() {
        RedisURI.Builder uri = RedisURI.Builder.sentinel(sentinels.get(0).host(), sentinels.get(0).port(), MASTER_NAME);
        sentinels.stream().skip(1).forEach(sentinel -> uri.withSentinel(sentinel.host(), sentinel.port()));
        return uri.build();
    }

    /**
     * Cuts the replica off from the master for good, as replication lag would: writes to the master from
     * now on never reach it, though it stays a replica that the Sentinels may promote.
     */
    public void detachReplica() {
        Replicas.detach(replica, master);
    }

    /** The server the first Sentinel names as the master now: {@link #master()} until a failover. */
    public RedisServer currentMaster() {
        String port = sentinels.get(0).callList("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME).get(1).toString();
        return port.equals(Integer.toString(master.port())) ? master : replica;
    }

    /**
     * Has a Sentinel promote the server that is the replica now ({@code SENTINEL FAILOVER}, which needs
     * no agreement and works whether the master is up or not; a failover the Sentinels already started on
     * their own counts as well), and waits until every Sentinel names it as the master. A set can fail
     * over again once the demoted master is a replica in sync. Returns the {@link System#nanoTime()} at
     * which the first command that the Sentinel accepted was sent (the servers' roles change after it).
     *
     * <p>A Sentinel may abort a failover it accepted (it picks the replica to promote again when the
     * failover starts, and may find none fit then); nothing changes then, so the command is sent again
     * if nothing changed for {@value #ATTEMPT_SECONDS} s. A failover that does not end within a minute
     * fails with what each Sentinel knows of the master.
     */
    public long failOver() {
        RedisServer promoted = currentMaster() == master ? replica : master;
        String port = Integer.toString(promoted.port());
        long started = System.nanoTime();
        long[] firstAccepted = {-1};
        long[] nextAttempt = {started};
        try {
            await("every Sentinel to name " + promoted + " as the master").atMost(FAILOVER_TIMEOUT).pollInterval(POLL_INTERVAL)
                .until(() -> {
                    if (sentinels.stream().allMatch(sentinel -> port.equals(namedMasterPort(sentinel)))) {
                        return true;
                    }
                    long sent = System.nanoTime();
                    if (sent - nextAttempt[0] >= 0) {
                        try {
                            sentinels.get(0).call("SENTINEL", "FAILOVER", MASTER_NAME);
                        } catch (IllegalStateException error) {
                            // NOGOODSLAVE: the replica is not yet fit, ask again; INPROG: one is already under way.
                            if (!String.valueOf(error.getMessage()).startsWith("INPROG")) {
                                return false;
                            }
                        }
                        firstAccepted[0] = firstAccepted[0] < 0 ? sent : firstAccepted[0];
                        nextAttempt[0] = sent + TimeUnit.SECONDS.toNanos(ATTEMPT_SECONDS);
                    }
                    return false;
                });
        } catch (ConditionTimeoutException stuck) {
            throw new IllegalStateException("the failover to " + promoted + " did not end within " + FAILOVER_TIMEOUT.toSeconds()
                    + " s; " + state(), stuck);
        }
        // None accepted: the Sentinels had failed over on their own already.
        return firstAccepted[0] < 0 ? started : firstAccepted[0];
    }

    /** What each Sentinel knows of the master, and each server's replication role: for an error message. */
    private String state() {
        StringBuilder state = new StringBuilder();
        for (RedisServer sentinel : sentinels) {
            state.append("Sentinel ").append(sentinel.port()).append(": ");
            try {
                state.append(String.join(" ", sentinel.call("SENTINEL", "MASTER", MASTER_NAME).split("\n")));
            } catch (RuntimeException e) {
                state.append(e.getMessage());
            }
            state.append("; ");
        }
        for (RedisServer server : List.of(master, replica)) {
            state.append(server).append(": ");
            try {
                state.append(server.call("INFO", "replication").lines().filter(line -> line.startsWith("role:")
                        || line.startsWith("master_port:") || line.startsWith("master_link_status:")).toList());
            } catch (RuntimeException e) {
                state.append(e.getMessage());
            }
            state.append("; ");
        }
        return state.toString();
    }

    /** The port of the master {@code sentinel} names, or null if it cannot tell now. */
    private static String namedMasterPort(RedisServer sentinel) {
        try {
            return String.valueOf(sentinel.callList("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME).get(1));
        } catch (RuntimeException unreachableOrUnsure) {
            return null;
        }
    }

    /** Stops every process. */
    @Override
    public void close() {
        Stream.concat(sentinels.stream(), Stream.of(replica, master)).forEach(RedisServer::close);
    }
}
