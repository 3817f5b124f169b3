package io.reactivelock.micrometer;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.contextpropagation.ObservationThreadLocalAccessor;
import io.reactivelock.LeaseTimeExceededException;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.ReactiveLock;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * A {@link ReactiveLock} that wraps each {@code withLock} of another in a Micrometer
 * {@link Observation} named {@value #NAME}, so that a trace shows how long the lock was waited for
 * and the body's own spans nest inside it.
 *
 * <pre>{@code
 * ReactiveLock locks = new ObservedReactiveLock(ReactiveRedisLock.create(uri), observationRegistry);
 * }</pre>
 *
 * <p>The observation starts at subscription, as a child of the observation in the subscriber's
 * Reactor {@code Context} (key {@link ObservationThreadLocalAccessor#KEY}), which is where Spring
 * WebFlux and Reactor's context propagation put the current one. When the lock is held it records
 * the event {@value #ACQUIRED_EVENT} ("waited 12 ms for lock sale:42"), and the body runs with
 * the observation as its parent. It stops when the {@code Mono} ends, with the low-cardinality
 * key {@code outcome}: {@code success}; the {@linkplain LockAcquisitionException.Reason#tag() reason}
 * of a failed acquisition ({@code busy}, {@code redis-unavailable}, {@code redis-error},
 * {@code quorum-not-reached}, {@code too-many-pending}, {@code closed}); {@code lost},
 * {@code max-lease-time}, {@code error} (the body failed) or {@code cancelled}. The lock name is
 * the high-cardinality key {@code lock}: in traces, never in the metrics derived from the
 * observation.
 */
public final class ObservedReactiveLock implements ReactiveLock {

    /** Name of the observation around each {@code withLock}. */
    public static final String NAME = "reactive.lock";
    /**
     * Name of the event recorded when the lock is held. Relative to the observation: Micrometer's
     * meter handler counts it as {@code reactive.lock.acquired} (observation name, dot, event name).
     */
    public static final String ACQUIRED_EVENT = "acquired";

    private final ReactiveLock delegate;
    private final ObservationRegistry registry;

    /** Observes every {@code withLock} of {@code delegate} in {@code registry}. */
    public ObservedReactiveLock(ReactiveLock delegate, ObservationRegistry registry) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
        this.registry = Objects.requireNonNull(registry, "registry");
    }

    /** This observed lock with another acquire timeout (see {@link ReactiveLock#withAcquireTimeout}). */
    @Override
    public ReactiveLock withAcquireTimeout(Duration acquireTimeout) {
        return new ObservedReactiveLock(delegate.withAcquireTimeout(acquireTimeout), registry);
    }

    @Override
    public <T> Mono<T> withLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
        Objects.requireNonNull(body, "body");
        // Called now, so that bad arguments are rejected at once, as the contract says.
        Mono<T> locked = delegate.withLock(name, ttl, lease -> Mono.deferContextual(context -> {
            Observation observation = context.get(ObservationThreadLocalAccessor.KEY);
            long startNanos = context.get(StartNanos.class).value();
            long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
            observation.event(Observation.Event.of(ACQUIRED_EVENT, "waited " + waitedMillis + " ms for lock " + name));
            return body.apply(lease);
        }));
        return Mono.deferContextual(context -> {
            Observation parent = context.getOrDefault(ObservationThreadLocalAccessor.KEY, null);
            Observation observation = Observation.createNotStarted(NAME, registry)
                    .parentObservation(parent)
                    .highCardinalityKeyValue("lock", name)
                    .start();
            // Stopped before the outcome reaches the subscriber (doFinally would stop it after).
            AtomicBoolean stopped = new AtomicBoolean();
            Consumer<String> stop = outcome -> {
                if (stopped.compareAndSet(false, true)) {
                    observation.lowCardinalityKeyValue("outcome", outcome);
                    observation.stop();
                }
            };
            return locked
                    .doOnError(observation::error)
                    .doOnTerminate(() -> stop.accept(outcome(observation.getContext().getError())))
                    .doOnCancel(() -> stop.accept("cancelled"))
                    .contextWrite(c -> c.put(ObservationThreadLocalAccessor.KEY, observation)
                            .put(StartNanos.class, new StartNanos(System.nanoTime())));
        });
    }

    private static String outcome(@Nullable Throwable error) {
        if (error == null) {
            return "success";
        }
        if (error instanceof LockAcquisitionException failure) {
            return failure.reason().tag();
        }
        if (error instanceof LockLostException) {
            return "lost";
        }
        if (error instanceof LeaseTimeExceededException) {
            return "max-lease-time";
        }
        return "error";
    }

    @Override
    public String toString() {
        return "ObservedReactiveLock{" + delegate + "}";
    }

    /** When the subscription started, for the wait reported in the acquired event. */
    private record StartNanos(long value) {}
}
