package io.reactivelock.micrometer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.reactivelock.LeaseTimeExceededException;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockException;
import io.reactivelock.LockListener;
import io.reactivelock.Primitive;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Micrometer meters of a lock of this library ({@link io.reactivelock.redis.ReactiveRedisLock},
 * {@link io.reactivelock.redis.ReactiveRedlock} or reactive-lock-test's {@code InMemoryReactiveLock}),
 * fed as its listener:
 *
 * <pre>{@code
 * LockOptions options = LockOptions.builder().listener(new LockMetrics(meterRegistry, false)).build();
 * }</pre>
 *
 * <ul>
 *   <li>{@value #ACQUIRE} (timer): time from subscription to holding the lock or giving up, tagged
 *       {@code outcome}: {@code acquired}, the {@linkplain LockAcquisitionException.Reason#tag()
 *       reason} of a failure ({@code busy}, {@code redis-unavailable}, {@code redis-error},
 *       {@code quorum-not-reached}, {@code too-many-pending}, {@code closed}) or
 *       {@code invalid-argument}. Its count per outcome counts acquisitions and failures by reason.
 *   <li>{@value #HELD} (timer): how long each holder kept the lock.
 *   <li>{@value #RENEWALS} (counter): lease renewals.
 *   <li>{@value #LOST} (counter): leases lost while held, tagged {@code cause}: {@code lost} (expired
 *       or taken, or Redis unreachable until it ran out) or {@code max-lease-time}.
 *   <li>{@value #HANDOFFS} (counter): releases that handed the lock straight to a waiter
 *       ({@link LockListener#handedOff}).
 *   <li>{@value #HOLDERS} (gauge): locks held now through this lock.
 * </ul>
 *
 * <p>The timers and counters carry a {@code primitive} tag: the {@linkplain Primitive#tag() kind}
 * of lock that reported them ({@code lock}, {@code semaphore}, {@code read-write-lock},
 * {@code multi-lock}); each primitive asks for its view by {@link #forPrimitive}. With
 * {@code tagLockNames} they also carry a {@code lock} tag with the lock name; only for a small,
 * fixed set of names, since every name makes new time series.
 *
 * <p>Use one instance per registry, shared by the locks that report to it: the gauge counts the
 * holders seen by the instance that registered it first.
 */
public final class LockMetrics implements LockListener {

    /** Timer of the wait for the lock, by outcome. */
    public static final String ACQUIRE = "reactive.lock.acquire";
    /** Timer of the time each lock was held. */
    public static final String HELD = "reactive.lock.held";
    /** Counter of lease renewals. */
    public static final String RENEWALS = "reactive.lock.renewals";
    /** Counter of leases lost while held, by cause. */
    public static final String LOST = "reactive.lock.lost";
    /** Counter of releases that handed the lock straight to a waiter. */
    public static final String HANDOFFS = "reactive.lock.handoffs";
    /** Gauge of the locks held now. */
    public static final String HOLDERS = "reactive.lock.holders";

    private static final String INVALID_NAME = "(invalid)";

    private final MeterRegistry registry;
    private final boolean tagLockNames;
    private final AtomicInteger held;
    private final Tags primitiveTag;

    /**
     * Registers the gauge now and the other meters as events come.
     *
     * @param tagLockNames whether to tag meters with the lock name (watch the cardinality)
     */
    public LockMetrics(MeterRegistry registry, boolean tagLockNames) {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.tagLockNames = tagLockNames;
        this.held = new AtomicInteger();
        this.primitiveTag = Tags.of("primitive", Primitive.LOCK.tag());
        Gauge.builder(HOLDERS, held, AtomicInteger::get)
                .description("Locks held now")
                .strongReference(true)
                .register(registry);
    }

    private LockMetrics(LockMetrics metrics, Primitive primitive) {
        this.registry = metrics.registry;
        this.tagLockNames = metrics.tagLockNames;
        this.held = metrics.held;
        this.primitiveTag = Tags.of("primitive", primitive.tag());
    }

    /** The same meters for acquisitions of {@code primitive}: its {@code primitive} tag; the gauge counts every kind. */
    @Override
    public LockListener forPrimitive(Primitive primitive) {
        return new LockMetrics(this, primitive);
    }

    @Override
    public void acquired(String name, Duration waited) {
        held.incrementAndGet();
        acquireTimer(name, "acquired").record(waited);
    }

    @Override
    public void acquireFailed(String name, Throwable error, Duration waited) {
        String outcome;
        String lock = name;
        if (error instanceof LockAcquisitionException failure) {
            outcome = failure.reason().tag();
        } else {
            outcome = "invalid-argument";
            lock = INVALID_NAME;
        }
        acquireTimer(lock, outcome).record(waited);
    }

    @Override
    public void renewed(String name) {
        Counter.builder(RENEWALS).description("Lease renewals").tags(lockTag(name)).register(registry).increment();
    }

    @Override
    public void lost(String name, LockException error) {
        String cause = error instanceof LeaseTimeExceededException ? "max-lease-time" : "lost";
        Counter.builder(LOST)
                .description("Leases lost while held")
                .tags(lockTag(name).and("cause", cause))
                .register(registry)
                .increment();
    }

    @Override
    public void released(String name, Duration heldFor) {
        held.decrementAndGet();
        Timer.builder(HELD).description("Time each lock was held").tags(lockTag(name)).register(registry).record(heldFor);
    }

    @Override
    public void handedOff(String name) {
        Counter.builder(HANDOFFS)
                .description("Releases that handed the lock straight to a waiter")
                .tags(lockTag(name))
                .register(registry)
                .increment();
    }

    private Timer acquireTimer(String name, String outcome) {
        return Timer.builder(ACQUIRE)
                .description("Wait for a lock, until held or given up")
                .tags(lockTag(name).and("outcome", outcome))
                .register(registry);
    }

    private Tags lockTag(String name) {
        return tagLockNames ? primitiveTag.and("lock", name) : primitiveTag;
    }

    @Override
    public String toString() {
        return "LockMetrics{tagLockNames=" + tagLockNames + ", " + primitiveTag + "}";
    }
}
