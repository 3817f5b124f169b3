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
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.context.Context;
import reactor.util.context.ContextView;

/**
 * A {@link ReactiveLock} that wraps each {@code withLock} and {@code withLockMany} of another in a Micrometer
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

    /** Observed as the other {@code withLock}; the delegate's own form for a body that does not see the lease. */
    @Override
    public <T> Mono<T> withLock(String name, Duration ttl, Mono<T> body) {
        Objects.requireNonNull(body, "body");
        // Called now, so that bad arguments are rejected at once, as the contract says.
        return observed(name, delegate.withLock(name, ttl, Mono.deferContextual(context -> {
            acquired(context, name);
            return body;
        })));
    }

    @Override
    public <T> Mono<T> withLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
        Objects.requireNonNull(body, "body");
        // Called now, so that bad arguments are rejected at once, as the contract says.
        return observed(name, delegate.withLock(name, ttl, lease -> Mono.deferContextual(context -> {
            acquired(context, name);
            return body.apply(lease);
        })));
    }

    private <T> Mono<T> observed(String name, Mono<T> locked) {
        return Mono.deferContextual(context -> {
            Observed observed = new Observed(context, name);
            return locked
                    .doOnError(observed::error)
                    .doOnTerminate(observed::terminated)
                    .doOnCancel(observed::cancelled)
                    .contextWrite(observed::into);
        });
    }

    /**
     * Observes {@code withLockMany} as {@code withLock}: one observation from subscription until the
     * {@code Flux} completes, fails or is cancelled; the body's values pass on inside it.
     */
    @Override
    public <T> Flux<T> withLockMany(String name, Duration ttl, Function<? super LockLease, ? extends Publisher<T>> body) {
        Objects.requireNonNull(body, "body");
        Flux<T> locked = delegate.withLockMany(name, ttl, lease -> Flux.deferContextual(context -> {
            acquired(context, name);
            return body.apply(lease);
        }));
        return Flux.deferContextual(context -> {
            Observed observed = new Observed(context, name);
            return locked
                    .doOnError(observed::error)
                    .doOnTerminate(observed::terminated)
                    .doOnCancel(observed::cancelled)
                    .contextWrite(observed::into);
        });
    }

    /** In the body's context, once the lock is held: records the acquired event with the wait. */
    private static void acquired(ContextView context, String name) {
        Observation observation = context.get(ObservationThreadLocalAccessor.KEY);
        long startNanos = context.get(StartNanos.class).value();
        long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
        observation.event(Observation.Event.of(ACQUIRED_EVENT, "waited " + waitedMillis + " ms for lock " + name));
    }

    /** The observation of one subscription, started as a child of the subscriber's, stopped once. */
    private final class Observed {
        private final Observation observation;
        private final long startNanos = System.nanoTime();
        private final AtomicBoolean stopped = new AtomicBoolean();

        Observed(ContextView context, String name) {
            Observation parent = context.getOrDefault(ObservationThreadLocalAccessor.KEY, null);
            this.observation = Observation.createNotStarted(NAME, registry)
                    .parentObservation(parent)
                    .highCardinalityKeyValue("lock", name)
                    .start();
        }

        void error(Throwable error) {
            observation.error(error);
        }

        /** Before the outcome reaches the subscriber (doFinally would stop it after). */
        void terminated() {
            stop(outcome(observation.getContext().getError()));
        }

        void cancelled() {
            stop("cancelled");
        }

        private void stop(String outcome) {
            if (stopped.compareAndSet(false, true)) {
                observation.lowCardinalityKeyValue("outcome", outcome);
                observation.stop();
            }
        }

        /** The context of the lock call: this observation, the current one of the body, and when it started. */
        Context into(Context context) {
            return context.put(ObservationThreadLocalAccessor.KEY, observation).put(StartNanos.class, new StartNanos(startNanos));
        }
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
