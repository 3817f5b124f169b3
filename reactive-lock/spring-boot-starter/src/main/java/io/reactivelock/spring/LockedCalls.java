package io.reactivelock.spring;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.ReactiveLock;
import io.reactivelock.spi.LockCore;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.publisher.Sinks;
import reactor.util.context.Context;
import reactor.util.context.ContextView;

/**
 * How one call of a {@link WithLock} method runs under its lock. Every form calls
 * {@link ReactiveLock#withLock} when the method is called (so a name or TTL the lock refuses
 * throws there) and subscribes to it at each subscription of the result.
 *
 * <p>A {@code Mono} method is the body of {@code withLock}, a {@code Flux} method the body of
 * {@code withLockMany}. A method that keeps its lock for {@link WithLock#lockAtLeastFor()} runs
 * beside a body that only holds the lock until told to release it, because the caller must see
 * the outcome before the delayed release. That body's Reactor context (where a
 * {@link io.reactivelock.ReentrantReactiveLock} marks the names it holds) is the method's too.
 */
final class LockedCalls {

    /** Context key of the per-subscription flag that the method was entered. */
    private static final Object ENTERED = new Object();
    /** Context key of the {@link Hold} of a subscription. */
    private static final Object HOLD = new Object();

    private LockedCalls() {}

    /**
     * The result of a {@code Mono} method (or suspend function): {@code method} subscribed under
     * the lock, and held on for the rest of {@code atLeast} after it ends.
     */
    static <T> Mono<T> mono(ReactiveLock lock, String name, Duration ttl, Duration atLeast, boolean skipWhenBusy,
            Supplier<? extends Mono<T>> method) {
        if (!atLeast.isZero()) {
            // singleOrEmpty waits for completion, so the value comes after the release when there is no delay left.
            return heldAtLeast(lock, name, ttl, atLeast, skipWhenBusy, method).singleOrEmpty();
        }
        Mono<T> locked = lock.withLock(name, ttl, Mono.deferContextual(context -> entered(context, method)));
        return skipWhenBusy ? skippingBusy(locked.flux()).singleOrEmpty() : locked;
    }

    /** The result of a {@code Flux} method: {@code method} subscribed under the lock, held until it terminates or is cancelled. */
    static <T> Flux<T> flux(ReactiveLock lock, String name, Duration ttl, Duration atLeast, boolean skipWhenBusy,
            Supplier<? extends Publisher<T>> method) {
        if (!atLeast.isZero()) {
            return heldAtLeast(lock, name, ttl, atLeast, skipWhenBusy, method);
        }
        Flux<T> locked = lock.withLockMany(name, ttl, lease -> Flux.deferContextual(context -> entered(context, method)));
        return skipWhenBusy ? skippingBusy(locked) : locked;
    }

    private static <P> P entered(ContextView context, Supplier<? extends P> method) {
        context.<AtomicBoolean>getOrEmpty(ENTERED).ifPresent(entered -> entered.set(true));
        return method.get();
    }

    /** {@code locked}, empty instead of failing when the lock stayed busy; the method's errors, even a busy nested lock, go on. */
    private static <T> Flux<T> skippingBusy(Flux<T> locked) {
        return Flux.defer(() -> {
            AtomicBoolean entered = new AtomicBoolean();
            return locked.onErrorResume(error -> !entered.get() && busy(error), error -> Flux.empty())
                    .contextWrite(Context.of(ENTERED, entered));
        });
    }

    /**
     * {@code method} subscribed under the lock, which is held on for the rest of {@code atLeast}
     * (counted from the method's subscription) after the method ended, while the caller already
     * has the outcome.
     */
    private static <T> Flux<T> heldAtLeast(ReactiveLock lock, String name, Duration ttl, Duration atLeast,
            boolean skipWhenBusy, Supplier<? extends Publisher<T>> method) {
        Mono<Void> holding = lock.withLock(name, ttl, Mono.deferContextual(context -> context.<Hold>get(HOLD).granted(context)));
        Mono<Hold> acquire = Mono.create(sink -> new Hold(sink, atLeast).start(holding));
        return Flux.usingWhen(skipWhenBusy ? acquire.onErrorResume(LockedCalls::busy, error -> Mono.empty()) : acquire,
                hold -> hold.guard(Flux.defer(method)),
                Hold::finish,
                // The method's error (or the loss) is what the subscriber gets, not a failed release.
                (hold, error) -> hold.finish().onErrorComplete(),
                Hold::cancel);
    }

    /** Whether {@code error} says that the lock stayed busy for the whole acquire timeout. */
    static boolean busy(Throwable error) {
        return error instanceof LockAcquisitionException failed && failed.reason() == LockAcquisitionException.Reason.BUSY;
    }

    /**
     * One subscription's hold of the lock: a {@code withLock} whose body waits for {@link #release}
     * and for the at-least time, so that renewal, loss detection and the release stay the lock's.
     */
    private static final class Hold {
        private final MonoSink<Hold> sink;
        private final Duration atLeast;
        private final Sinks.Empty<Void> release = Sinks.empty();
        /** Completes once the at-least time, counted from the method's subscription, is over. */
        private final Sinks.Empty<Void> window = Sinks.empty();
        private final Disposable.Swap timer = Disposables.swap();
        /** Completes once {@code withLock} released; fails if it failed after the grant (lease lost, held too long). */
        private final Sinks.Empty<Void> ended = Sinks.empty();
        private final Disposable.Swap subscription = Disposables.swap();
        private volatile boolean granted;
        private volatile boolean atLeastOver;
        private volatile @Nullable Throwable lost;
        private volatile ContextView body = Context.empty();

        Hold(MonoSink<Hold> sink, Duration atLeast) {
            this.sink = sink;
            this.atLeast = atLeast;
        }

        void start(Mono<Void> holding) {
            // Cancelled before the grant: cancelling withLock releases whatever it may hold.
            sink.onCancel(subscription);
            // Closing the lock does not cut a window short: it waits for it (at most its close timeout).
            subscription.update(LockCore.runningThroughClose(holding.contextWrite(sink.contextView())
                            .contextWrite(Context.of(HOLD, this)))
                    .subscribe(done -> {}, this::failed, ended::tryEmitEmpty));
        }

        /**
         * The body of {@code withLock}: the lock is held until it completes, which is when the method
         * has ended and the at-least time, counted from the method's subscription, is over.
         */
        Mono<Void> granted(ContextView context) {
            body = context;
            granted = true;
            sink.success(this); // subscribes the method
            return Mono.when(release.asMono(), window.asMono()).doOnCancel(timer::dispose);
        }

        /**
         * Starts the at-least time once the method is subscribed (its own code has run by then), so
         * that the next run starts at least that long after this one did; and before it can end, so
         * that a caller that sees the method end (and moves a virtual clock on) finds it counting.
         */
        private void methodSubscribed() {
            timer.update(Mono.delay(atLeast).subscribe(tick -> {
                atLeastOver = true;
                window.tryEmitEmpty();
            }));
        }

        private void failed(Throwable error) {
            if (!granted) {
                sink.error(error);
                return;
            }
            lost = error;
            ended.tryEmitError(error);
        }

        /** {@code method} cancelled, and failed with the loss, if the hold ends before it does. */
        <T> Flux<T> guard(Flux<T> method) {
            // While the method runs the hold can only end by a loss: its release waits for the method.
            return method.doOnSubscribe(s -> methodSubscribed())
                    .takeUntilOther(ended.asMono().onErrorComplete())
                    .concatWith(Mono.defer(() -> {
                        Throwable error = lost;
                        return error == null ? Mono.<T>empty() : Mono.<T>error(error);
                    }))
                    .contextWrite(context -> context.putAll(body));
        }

        /** The method ended: release, and wait for the release unless it waits for the rest of the at-least time. */
        Mono<Void> finish() {
            boolean holdingOn = !atLeastOver && lost == null;
            release.tryEmitEmpty();
            return holdingOn ? Mono.empty() : ended.asMono();
        }

        /** The subscriber cancelled: release at once, in the background, as {@code withLock} does on cancel. */
        Mono<Void> cancel() {
            return Mono.fromRunnable(subscription::dispose);
        }
    }
}
