package io.reactivelock.support;

import static org.awaitility.Awaitility.await;

import java.time.Duration;

/** Replication tricks shared by {@link RedisCluster} and {@link RedisSentinelSet}. */
final class Replicas {

    private Replicas() {
    }

    /**
     * Cuts {@code replica} off from {@code master} for good while it stays a replica, as replication lag
     * would at the moment of a failover: writes to the master from now on never reach it. The master drops
     * the replica's link; the replica's attempts to link again fail, because it now sends a password that
     * the master (which has none) refuses.
     */
    static void detach(RedisServer replica, RedisServer master) {
        replica.call("CONFIG", "SET", "masterauth", "not-the-masters-password");
        master.call("CLIENT", "KILL", "TYPE", "replica");
        await("the replica to lose its master").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
                .until(() -> replica.call("INFO", "replication").contains("master_link_status:down"));
    }
}
