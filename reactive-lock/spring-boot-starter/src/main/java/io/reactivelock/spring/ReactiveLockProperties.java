package io.reactivelock.spring;

import io.reactivelock.LockListener;
import io.reactivelock.LockOptions;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code reactive-lock.*} properties: the {@link LockOptions} of the auto-configured lock.
 * Defaults are those of {@link LockOptions} (literals here, so that IDEs can show them).
 */
@ConfigurationProperties("reactive-lock")
public class ReactiveLockProperties {

    /** Whether the locks are auto-configured at all; false leaves every reactive-lock bean to the application. */
    private boolean enabled = true;

    /**
     * Whether the locks are reactive-lock-test's in-memory ones (one JVM, no Redis) instead of Redis
     * ones: for an application's tests, which then need reactive-lock-test on their class path.
     */
    private boolean inMemory;

    /** Prefix of every Redis key and channel of the locks (1 to 64 characters, no braces). */
    private String keyPrefix = "lock";

    /** How long an acquisition waits for a busy lock before it fails; 0 tries once. */
    private Duration acquireTimeout = Duration.ofSeconds(10);

    /** First pause between two attempts on a busy lock. */
    private Duration minBackoff = Duration.ofMillis(5);

    /** Largest pause between two attempts on a busy lock. */
    private Duration maxBackoff = Duration.ofMillis(200);

    /** Longest time one holder may keep a lock, renewals included. */
    private Duration maxLeaseTime = Duration.ofMinutes(10);

    /** Longest wait for the reply to one Redis command. */
    private Duration commandTimeout = Duration.ofSeconds(2);

    /**
     * Longest wait, when the application context closes, for the releases of the locks its running
     * bodies held (they are cancelled first); a name still held after it stays until its TTL.
     */
    private Duration closeTimeout = Duration.ofSeconds(5);

    /**
     * How many replicas must acknowledge each grant before its body runs: -1 (the default) every
     * replica the master reports, 0 none (off), a positive number that many.
     */
    private int replicaAcknowledgement = LockOptions.ALL_REPLICAS;

    /** Longest wait for the replicas' (or the disks') acknowledgement of a grant; unset, a quarter of the command timeout. */
    private @Nullable Duration replicaAckTimeout;

    /**
     * Whether each grant waits until it is on the disk of the master (and of the acknowledging replicas)
     * with WAITAOF: Redis 7.2+ or Valkey 8 with appendonly on, else the context fails to start.
     */
    private boolean durableGrants;

    /** Whether waiters get a busy lock in arrival order (a queue in Redis). */
    private boolean fair;

    private final Metrics metrics = new Metrics();

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public boolean isInMemory() {
        return inMemory;
    }

    public void setInMemory(boolean inMemory) {
        this.inMemory = inMemory;
    }

    public String getKeyPrefix() {
        return keyPrefix;
    }

    public void setKeyPrefix(String keyPrefix) {
        this.keyPrefix = keyPrefix;
    }

    public Duration getAcquireTimeout() {
        return acquireTimeout;
    }

    public void setAcquireTimeout(Duration acquireTimeout) {
        this.acquireTimeout = acquireTimeout;
    }

    public Duration getMinBackoff() {
        return minBackoff;
    }

    public void setMinBackoff(Duration minBackoff) {
        this.minBackoff = minBackoff;
    }

    public Duration getMaxBackoff() {
        return maxBackoff;
    }

    public void setMaxBackoff(Duration maxBackoff) {
        this.maxBackoff = maxBackoff;
    }

    public Duration getMaxLeaseTime() {
        return maxLeaseTime;
    }

    public void setMaxLeaseTime(Duration maxLeaseTime) {
        this.maxLeaseTime = maxLeaseTime;
    }

    public Duration getCommandTimeout() {
        return commandTimeout;
    }

    public void setCommandTimeout(Duration commandTimeout) {
        this.commandTimeout = commandTimeout;
    }

    public Duration getCloseTimeout() {
        return closeTimeout;
    }

    public void setCloseTimeout(Duration closeTimeout) {
        this.closeTimeout = closeTimeout;
    }

    public int getReplicaAcknowledgement() {
        return replicaAcknowledgement;
    }

    public void setReplicaAcknowledgement(int replicaAcknowledgement) {
        this.replicaAcknowledgement = replicaAcknowledgement;
    }

    public @Nullable Duration getReplicaAckTimeout() {
        return replicaAckTimeout;
    }

    public void setReplicaAckTimeout(@Nullable Duration replicaAckTimeout) {
        this.replicaAckTimeout = replicaAckTimeout;
    }

    public boolean isDurableGrants() {
        return durableGrants;
    }

    public void setDurableGrants(boolean durableGrants) {
        this.durableGrants = durableGrants;
    }

    public boolean isFair() {
        return fair;
    }

    public void setFair(boolean fair) {
        this.fair = fair;
    }

    public Metrics getMetrics() {
        return metrics;
    }

    /** The lock options these properties describe, with the given listener. */
    LockOptions toOptions(LockListener listener) {
        return LockOptions.builder()
                .keyPrefix(keyPrefix)
                .acquireTimeout(acquireTimeout)
                .backoff(minBackoff, maxBackoff)
                .maxLeaseTime(maxLeaseTime)
                .commandTimeout(commandTimeout)
                .closeTimeout(closeTimeout)
                .replicaAcknowledgement(replicaAcknowledgement)
                .replicaAckTimeout(replicaAckTimeout)
                .durableGrants(durableGrants)
                .listener(listener)
                .build();
    }

    /** The {@code reactive-lock.metrics.*} properties. */
    public static class Metrics {

        /**
         * Whether to tag the lock meters with the lock name. Only for a small, fixed set of names:
         * every name makes new time series.
         */
        private boolean tagLockNames;

        public boolean isTagLockNames() {
            return tagLockNames;
        }

        public void setTagLockNames(boolean tagLockNames) {
            this.tagLockNames = tagLockNames;
        }
    }
}
