package io.reactivelock;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Immutable settings shared by every lock taken through one {@link ReactiveLock}.
 *
 * <p>Build with {@link #builder()}, or use {@link #defaults()}. Every value is checked when
 * {@link Builder#build()} runs, so a bad setting fails at start-up rather than on the first lock.
 * The lease time-to-live is not an option: it is chosen per call of {@code withLock}.
 */
public final class LockOptions {

    /** Default key prefix: lock keys look like {@code lock:{name}}. */
    public static final String DEFAULT_KEY_PREFIX = "lock";
    /** Default time an acquisition may wait for a busy lock before it fails. */
    public static final Duration DEFAULT_ACQUIRE_TIMEOUT = Duration.ofSeconds(10);
    /** Default first backoff step between two acquire attempts. */
    public static final Duration DEFAULT_MIN_BACKOFF = Duration.ofMillis(5);
    /** Default largest backoff step between two acquire attempts. */
    public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofMillis(200);
    /** Default jitter factor applied to each backoff step. */
    public static final double DEFAULT_JITTER = 0.5;
    /** Default cap on how long one holder may keep a lock through renewals. */
    public static final Duration DEFAULT_MAX_LEASE_TIME = Duration.ofMinutes(10);
    /** Default time to wait for the reply to one Redis command. */
    public static final Duration DEFAULT_COMMAND_TIMEOUT = Duration.ofSeconds(2);
    /** Default longest wait of a client's close for the releases of what its bodies held. */
    public static final Duration DEFAULT_CLOSE_TIMEOUT = Duration.ofSeconds(5);
    /** Shortest waiter lease of a fair lock; see {@link #waiterLease()}. */
    public static final Duration MIN_WAITER_LEASE = Duration.ofSeconds(1);
    /** Longest accepted key prefix. */
    public static final int MAX_KEY_PREFIX_LENGTH = 64;
    /** Default bound on the acquisitions one lock instance keeps waiting at once. */
    public static final int DEFAULT_MAX_PENDING_ACQUISITIONS = 10_000;
    /** {@link Builder#replicaAcknowledgement(int)}: wait for every replica the master reports (the default). */
    public static final int ALL_REPLICAS = -1;

    private static final LockOptions DEFAULTS = builder().build();

    private final String keyPrefix;
    private final Duration acquireTimeout;
    private final Duration minBackoff;
    private final Duration maxBackoff;
    private final double jitter;
    private final @Nullable Duration renewalInterval;
    private final Duration maxLeaseTime;
    private final Duration commandTimeout;
    private final Duration closeTimeout;
    private final @Nullable Scheduler scheduler;
    private final int maxPendingAcquisitions;
    private final LockListener listener;
    private final int replicaAcknowledgement;
    private final @Nullable Duration replicaAckTimeout;
    private final boolean durableGrants;

    private LockOptions(Builder b) {
        this.keyPrefix = b.keyPrefix;
        this.acquireTimeout = b.acquireTimeout;
        this.minBackoff = b.minBackoff;
        this.maxBackoff = b.maxBackoff;
        this.jitter = b.jitter;
        this.renewalInterval = b.renewalInterval;
        this.maxLeaseTime = b.maxLeaseTime;
        this.commandTimeout = b.commandTimeout;
        this.closeTimeout = b.closeTimeout;
        this.scheduler = b.scheduler;
        this.maxPendingAcquisitions = b.maxPendingAcquisitions;
        this.listener = b.listener;
        this.replicaAcknowledgement = b.replicaAcknowledgement;
        this.replicaAckTimeout = b.replicaAckTimeout;
        this.durableGrants = b.durableGrants;
    }

    /** The default options; see each {@link Builder} method for its default. */
    public static LockOptions defaults() {
        return DEFAULTS;
    }

    /** A builder initialised with the defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder initialised with these options, to derive a variant. */
    public Builder toBuilder() {
        return new Builder(this);
    }

    /** Prefix of every Redis key and channel this lock uses. */
    public String keyPrefix() {
        return keyPrefix;
    }

    /** How long an acquisition waits for a busy lock; {@link Duration#ZERO} tries once. */
    public Duration acquireTimeout() {
        return acquireTimeout;
    }

    /** First backoff step between acquire attempts. */
    public Duration minBackoff() {
        return minBackoff;
    }

    /** Largest backoff step between acquire attempts. */
    public Duration maxBackoff() {
        return maxBackoff;
    }

    /** Jitter factor of each backoff step, in [0, 1]. */
    public double jitter() {
        return jitter;
    }

    /** Renewal period, or {@code null} for a third of each call's TTL. */
    public @Nullable Duration renewalInterval() {
        return renewalInterval;
    }

    /** Renewal period for a lease of the given TTL. */
    public Duration renewalIntervalFor(Duration ttl) {
        return renewalInterval != null ? renewalInterval : Duration.ofNanos(ttl.toNanos() / 3); // dividedBy goes through BigDecimal
    }

    /** Longest time one holder keeps a lock; past it the body is cancelled. */
    public Duration maxLeaseTime() {
        return maxLeaseTime;
    }

    /** Longest wait for the reply to a single Redis command. */
    public Duration commandTimeout() {
        return commandTimeout;
    }

    /** Longest wait of a client's close for the releases of what its bodies held; see {@link Builder#closeTimeout(Duration)}. */
    public Duration closeTimeout() {
        return closeTimeout;
    }

    /**
     * The longest a waiter of a fair lock may go without calling Redis before it loses its place:
     * five of the longest backoff steps, and at least one second so that a short pause (GC, a busy
     * machine) does not cost a live waiter its place. A crashed waiter holds up the line for at
     * most this long.
     */
    public Duration waiterLease() {
        Duration fiveSteps = maxBackoff.multipliedBy(5);
        return fiveSteps.compareTo(MIN_WAITER_LEASE) < 0 ? MIN_WAITER_LEASE : fiveSteps;
    }

    /**
     * The scheduler for backoff, renewal and timeouts. Resolved at each use, so that
     * {@code StepVerifier.withVirtualTime} replaces the default {@link Schedulers#parallel()}.
     */
    public Scheduler scheduler() {
        return scheduler != null ? scheduler : Schedulers.parallel();
    }

    /** Most acquisitions one lock instance keeps in progress at once; see {@link Builder#maxPendingAcquisitions(int)}. */
    public int maxPendingAcquisitions() {
        return maxPendingAcquisitions;
    }

    /** Who hears about acquisitions, renewals, losses and releases; {@link LockListener#NONE} by default. */
    public LockListener listener() {
        return listener;
    }

    /**
     * How many replicas must acknowledge a grant or a renewal before it counts:
     * {@link #ALL_REPLICAS} (every replica the master reports), 0 (off), or a number; see
     * {@link Builder#replicaAcknowledgement(int)}.
     */
    public int replicaAcknowledgement() {
        return replicaAcknowledgement;
    }

    /**
     * How long one {@code WAIT} for the replicas may take before the grant is released and tried
     * again: as set, or a quarter of the {@linkplain #commandTimeout() command timeout}.
     */
    public Duration replicaAckTimeout() {
        return replicaAckTimeout != null ? replicaAckTimeout : Duration.ofNanos(commandTimeout.toNanos() / 4);
    }

    /**
     * Whether a grant or renewal counts only once it is on the master's append-only file, and on
     * the replicas' if they are waited for ({@code WAITAOF}); see {@link Builder#durableGrants(boolean)}.
     */
    public boolean durableGrants() {
        return durableGrants;
    }

    @Override
    public String toString() {
        return "LockOptions{keyPrefix='" + keyPrefix + "', acquireTimeout=" + acquireTimeout
                + ", minBackoff=" + minBackoff + ", maxBackoff=" + maxBackoff + ", jitter=" + jitter
                + ", renewalInterval=" + (renewalInterval == null ? "ttl/3" : renewalInterval)
                + ", maxLeaseTime=" + maxLeaseTime + ", commandTimeout=" + commandTimeout + ", closeTimeout=" + closeTimeout
                + ", maxPendingAcquisitions=" + maxPendingAcquisitions
                + ", replicaAcknowledgement=" + (replicaAcknowledgement == ALL_REPLICAS ? "all" : replicaAcknowledgement)
                + ", replicaAckTimeout=" + replicaAckTimeout() + ", durableGrants=" + durableGrants + "}";
    }

    /** Mutable builder of {@link LockOptions}; not thread-safe. */
    public static final class Builder {
        private String keyPrefix = DEFAULT_KEY_PREFIX;
        private Duration acquireTimeout = DEFAULT_ACQUIRE_TIMEOUT;
        private Duration minBackoff = DEFAULT_MIN_BACKOFF;
        private Duration maxBackoff = DEFAULT_MAX_BACKOFF;
        private double jitter = DEFAULT_JITTER;
        private @Nullable Duration renewalInterval;
        private Duration maxLeaseTime = DEFAULT_MAX_LEASE_TIME;
        private Duration commandTimeout = DEFAULT_COMMAND_TIMEOUT;
        private Duration closeTimeout = DEFAULT_CLOSE_TIMEOUT;
        private @Nullable Scheduler scheduler;
        private int maxPendingAcquisitions = DEFAULT_MAX_PENDING_ACQUISITIONS;
        private LockListener listener = LockListener.NONE;
        private int replicaAcknowledgement = ALL_REPLICAS;
        private @Nullable Duration replicaAckTimeout;
        private boolean durableGrants;

        private Builder() {}

        private Builder(LockOptions o) {
            keyPrefix = o.keyPrefix;
            acquireTimeout = o.acquireTimeout;
            minBackoff = o.minBackoff;
            maxBackoff = o.maxBackoff;
            jitter = o.jitter;
            renewalInterval = o.renewalInterval;
            maxLeaseTime = o.maxLeaseTime;
            commandTimeout = o.commandTimeout;
            closeTimeout = o.closeTimeout;
            scheduler = o.scheduler;
            maxPendingAcquisitions = o.maxPendingAcquisitions;
            listener = o.listener;
            replicaAcknowledgement = o.replicaAcknowledgement;
            replicaAckTimeout = o.replicaAckTimeout;
            durableGrants = o.durableGrants;
        }

        /**
         * Prefix of every key and channel: 1 to 64 characters, without <code>{</code> or
         * <code>}</code> (they would break Cluster hash tags). Defaults to {@code "lock"}.
         */
        public Builder keyPrefix(String keyPrefix) {
            Objects.requireNonNull(keyPrefix, "keyPrefix");
            if (keyPrefix.isEmpty() || keyPrefix.length() > MAX_KEY_PREFIX_LENGTH) {
                throw new IllegalArgumentException("keyPrefix must have 1 to " + MAX_KEY_PREFIX_LENGTH
                        + " characters, got " + keyPrefix.length());
            }
            if (keyPrefix.indexOf('{') >= 0 || keyPrefix.indexOf('}') >= 0) {
                throw new IllegalArgumentException("keyPrefix must not contain '{' or '}': '" + keyPrefix + "'");
            }
            this.keyPrefix = keyPrefix;
            return this;
        }

        /**
         * How long an acquisition retries a busy lock before failing with
         * {@link LockAcquisitionException}; zero or more, {@link Duration#ZERO} means one attempt.
         * Defaults to 10 seconds.
         */
        public Builder acquireTimeout(Duration acquireTimeout) {
            this.acquireTimeout = notNegative(acquireTimeout, "acquireTimeout");
            return this;
        }

        /**
         * Exponential backoff between attempts on a busy lock, from {@code min} up to {@code max}
         * (both positive, {@code min <= max}). A waiter that listens for release notices (a lock
         * created with a pub/sub connection) wakes on the notice, and once its subscription is
         * confirmed it polls only every {@code max}, to cover a lost notice or an expired lease.
         * Defaults to 5 ms and 200 ms.
         */
        public Builder backoff(Duration min, Duration max) {
            positive(min, "minBackoff");
            positive(max, "maxBackoff");
            if (min.compareTo(max) > 0) {
                throw new IllegalArgumentException("minBackoff (" + min + ") must not exceed maxBackoff (" + max + ")");
            }
            this.minBackoff = min;
            this.maxBackoff = max;
            return this;
        }

        /** Jitter factor of each backoff step, in [0, 1]. Defaults to 0.5. */
        public Builder jitter(double jitter) {
            if (!(jitter >= 0 && jitter <= 1)) {
                throw new IllegalArgumentException("jitter must be in [0, 1], got " + jitter);
            }
            this.jitter = jitter;
            return this;
        }

        /**
         * Fixed renewal period, positive; each call then requires it to be below its TTL.
         * {@code null} renews every third of the TTL. Defaults to {@code null}.
         */
        public Builder renewalInterval(@Nullable Duration renewalInterval) {
            this.renewalInterval = renewalInterval == null ? null : positive(renewalInterval, "renewalInterval");
            return this;
        }

        /**
         * Longest time one holder may keep a lock, renewals included; past it the body is
         * cancelled, the lock released and the call fails with {@link LeaseTimeExceededException}.
         * Positive. Defaults to 10 minutes.
         */
        public Builder maxLeaseTime(Duration maxLeaseTime) {
            this.maxLeaseTime = positive(maxLeaseTime, "maxLeaseTime");
            return this;
        }

        /** Longest wait for one Redis reply, positive. Defaults to 2 seconds. */
        public Builder commandTimeout(Duration commandTimeout) {
            this.commandTimeout = positive(commandTimeout, "commandTimeout");
            return this;
        }

        /**
         * Longest wait of a client's {@code closeAsync()} for the releases of what it holds: it
         * cancels the bodies running and the acquisitions under way, releases their locks by token
         * (and any grant whose reply is still on its way), and closes its connections once those
         * releases are answered or this long has passed, whichever comes first; a name whose
         * release was not answered is logged at WARN and stays until its TTL. Positive. Defaults
         * to 5 seconds.
         */
        public Builder closeTimeout(Duration closeTimeout) {
            this.closeTimeout = positive(closeTimeout, "closeTimeout");
            return this;
        }

        /**
         * Scheduler for backoff, renewal and timeouts. {@code null} uses
         * {@link Schedulers#parallel()}, looked up at each use. Defaults to {@code null}.
         */
        public Builder scheduler(@Nullable Scheduler scheduler) {
            this.scheduler = scheduler;
            return this;
        }

        /**
         * Most acquisitions one lock instance keeps in progress (subscribed, not yet holding) at
         * once, so that a burst of callers cannot pile up without limit. Past it, a new
         * subscription fails at once with {@link TooManyPendingAcquisitionsException} and sends
         * nothing to Redis. Applies to {@link io.reactivelock.redis.ReactiveRedisLock}. Positive. Defaults to 10,000.
         */
        public Builder maxPendingAcquisitions(int maxPendingAcquisitions) {
            if (maxPendingAcquisitions < 1) {
                throw new IllegalArgumentException("maxPendingAcquisitions must be positive, got " + maxPendingAcquisitions);
            }
            this.maxPendingAcquisitions = maxPendingAcquisitions;
            return this;
        }

        /**
         * Listener of lock events, for metrics such as
         * {@code io.reactivelock.micrometer.LockMetrics}; every lock of the library calls it (the
         * Redis, Redlock and in-memory ones). Defaults to {@link LockListener#NONE}.
         */
        public Builder listener(LockListener listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /**
         * Replica-acknowledged grants of {@link io.reactivelock.redis.ReactiveRedisLock} on a master with replicas
         * (standalone, Sentinel, or each master of a Cluster): a grant reaches the body, and a renewal extends the lease, only
         * once that many replicas acknowledged the write that made it ({@code WAIT}), so that a
         * replica promoted after a failover still has the lock. {@link #ALL_REPLICAS}, the
         * default, waits for every replica the master reports when the client connects (and
         * reconnects; on a Cluster, at each master's first grant, so also on a replica promoted
         * since, and again at each grant on a master that had none), and does nothing on a master
         * without replicas; 0 turns it off; a positive
         * number waits for that many. A grant that is not acknowledged within
         * {@link #replicaAckTimeout(Duration)} is released and tried again until the acquire
         * timeout; when the master reports no connected replica left (or fewer than a number set),
         * the acquisition fails at once. Either way with
         * {@link LockAcquisitionException.Reason#NOT_REPLICATED}.
         */
        public Builder replicaAcknowledgement(int replicas) {
            if (replicas < ALL_REPLICAS) {
                throw new IllegalArgumentException("replicaAcknowledgement must be ALL_REPLICAS (-1), 0 (off) or a number of replicas, got "
                        + replicas);
            }
            this.replicaAcknowledgement = replicas;
            return this;
        }

        /**
         * How long one {@code WAIT} for the replicas (or {@code WAITAOF}, {@link #durableGrants(boolean)}) may take, positive; {@code null} (the default)
         * is a quarter of the command timeout, so that a grant queued behind another's slow
         * {@code WAIT} still answers within the command timeout.
         */
        public Builder replicaAckTimeout(@Nullable Duration timeout) {
            this.replicaAckTimeout = timeout == null ? null : positive(timeout, "replicaAckTimeout");
            return this;
        }

        /**
         * Durable grants of {@link io.reactivelock.redis.ReactiveRedisLock} (standalone, Sentinel or Cluster):
         * a grant reaches the body, and a renewal extends the lease, only once
         * {@code WAITAOF 1 numreplicas timeout} says the write that made it is fsynced to the master's
         * append-only file, and to the append-only files of the replicas that
         * {@link #replicaAcknowledgement(int)} waits for (a replica counts only with its own AOF on), so
         * that a master restarted from its AOF still has every lock it granted. Each
         * {@code WAITAOF} may take {@link #replicaAckTimeout(Duration)}; a grant it does not
         * acknowledge in time is released and tried again, as a replica-acknowledged one is
         * ({@link LockAcquisitionException.Reason#NOT_REPLICATED}). Checked when the client is
         * created, which fails with {@link IllegalStateException} on a server without
         * {@code WAITAOF} (before Redis 7.2 or Valkey 8), with the AOF off ({@code appendonly no}),
         * or for a user who may not run {@code WAITAOF} (on a Cluster: on any of its masters, and for a
         * master promoted since, at its first grant, which then fails the same way). Defaults to
         * {@code false}.
         */
        public Builder durableGrants(boolean durable) {
            this.durableGrants = durable;
            return this;
        }

        /** The options. */
        public LockOptions build() {
            return new LockOptions(this);
        }

        private static Duration positive(Duration d, String name) {
            Objects.requireNonNull(d, name);
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(name + " must be positive, got " + d);
            }
            return d;
        }

        private static Duration notNegative(Duration d, String name) {
            Objects.requireNonNull(d, name);
            if (d.isNegative()) {
                throw new IllegalArgumentException(name + " must not be negative, got " + d);
            }
            return d;
        }
    }
}
