package io.reactivelock;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.context.ContextView;

/**
 * Makes any {@link ReactiveLock} reentrant within one subscription chain: a {@code withLock}
 * subscribed inside the body of a {@code withLock} of this wrapper for the same name joins the
 * held lease instead of waiting for itself.
 *
 * <pre>{@code
 * ReactiveLock locks = ReentrantReactiveLock.of(ReactiveRedisLock.create(uri));
 * locks.withLock("order:42", ttl, locks.withLock("order:42", ttl, pay(42)))  // the inner call joins
 * }</pre>
 *
 * <p>"Inside" is decided by the Reactor {@link reactor.util.context.Context}, not by threads: the
 * body runs with the held names in its context, so a nested call sees them wherever its operators
 * hop, while an unrelated chain that asks for the same name on the same thread waits for it like
 * any other holder. A joined call runs its body at once with the outer {@link LockLease} (same
 * token and fencing token), ignores its own TTL, and releases nothing when it ends, whether it
 * completes, fails or is cancelled: the outermost call releases. A joined call subscribed after
 * the outer body ended (work that escaped the chain with its context, after a lease loss or
 * release) fails with {@link LockLostException} and does not run its body.
 *
 * <p>Arguments are checked by the wrapped lock, when {@code withLock} is called.
 */
public final class ReentrantReactiveLock implements ReactiveLock {

    private final ReactiveLock delegate;
    /** This wrapper's context key: two wrappers (two Redis deployments, say) never join each other's locks. */
    private final Object heldKey;

    private ReentrantReactiveLock(ReactiveLock delegate, Object heldKey) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
        this.heldKey = heldKey;
    }

    /** A reentrant view of {@code delegate}; locks taken through {@code delegate} directly are not joined. */
    public static ReentrantReactiveLock of(ReactiveLock delegate) {
        return new ReentrantReactiveLock(delegate, new Object());
    }

    /** This wrapper with another acquire timeout; nested calls through either join the same held locks. */
    @Override
    public ReentrantReactiveLock withAcquireTimeout(Duration acquireTimeout) {
        return new ReentrantReactiveLock(delegate.withAcquireTimeout(acquireTimeout), heldKey);
    }

    @Override
    public <T> Mono<T> withLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
        Objects.requireNonNull(body, "body");
        Mono<T> acquire = delegate.withLock(name, ttl, lease -> Mono.deferContextual(outer -> {
            Held held = new Held(lease);
            Map<String, Held> inner = joined(outer, name, held);
            return Mono.defer(() -> Objects.requireNonNull(body.apply(lease), "the body function returned null"))
                    // Before the signal travels on to the release: a joined call after it must fail.
                    .doOnTerminate(() -> held.ended = true)
                    .doOnCancel(() -> held.ended = true)
                    .contextWrite(context -> context.put(heldKey, inner));
        }));
        return Mono.deferContextual(context -> {
            Held held = heldNames(context).get(name);
            if (held == null) {
                return acquire;
            }
            if (held.ended) {
                return Mono.error(new LockLostException(name, "the enclosing withLock no longer holds it", null));
            }
            return Mono.defer(() -> Objects.requireNonNull(body.apply(held.lease), "the body function returned null"));
        });
    }

    /** As {@link #withLock(String, Duration, Function)}, for a body of many values. */
    @Override
    public <T> Flux<T> withLockMany(String name, Duration ttl, Function<? super LockLease, ? extends Publisher<T>> body) {
        Objects.requireNonNull(body, "body");
        Flux<T> acquire = delegate.withLockMany(name, ttl, lease -> Flux.deferContextual(outer -> {
            Held held = new Held(lease);
            return Flux.defer(() -> Objects.requireNonNull(body.apply(lease), "the body function returned null"))
                    .doOnTerminate(() -> held.ended = true)
                    .doOnCancel(() -> held.ended = true)
                    .contextWrite(context -> context.put(heldKey, joined(outer, name, held)));
        }));
        return Flux.deferContextual(context -> {
            Held held = heldNames(context).get(name);
            if (held == null) {
                return acquire;
            }
            if (held.ended) {
                return Flux.error(new LockLostException(name, "the enclosing withLock no longer holds it", null));
            }
            return Flux.defer(() -> Objects.requireNonNull(body.apply(held.lease), "the body function returned null"));
        });
    }

    /** The names held inside a body: the enclosing calls' and {@code name}. */
    private Map<String, Held> joined(ContextView outer, String name, Held held) {
        Map<String, Held> names = new HashMap<>(heldNames(outer));
        names.put(name, held);
        return Map.copyOf(names);
    }

    private Map<String, Held> heldNames(ContextView context) {
        return context.<Map<String, Held>>getOrDefault(heldKey, Map.of());
    }

    /** A lease held by an enclosing call, and whether that call's body has ended. */
    private static final class Held {
        final LockLease lease;
        volatile boolean ended;

        Held(LockLease lease) {
            this.lease = lease;
        }
    }

    @Override
    public String toString() {
        return "ReentrantReactiveLock{" + delegate + "}";
    }
}
