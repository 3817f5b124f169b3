package io.reactivelock.spring;

import io.reactivelock.ReactiveLock;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.UnaryOperator;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.core.BridgeMethodResolver;
import org.springframework.core.annotation.AnnotatedElementUtils;
import reactor.core.Exceptions;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The advice of {@link WithLock} methods: evaluates the lock name, then returns the method's
 * result as {@link LockedCalls} runs it under the lock. The method itself is called at each
 * subscription of that result, once the lock is held.
 */
final class WithLockInterceptor implements MethodInterceptor {

    private final ObjectProvider<ReactiveLock> locks;
    private final Map<Method, WithLockMethod> methods = new ConcurrentHashMap<>();
    private final Map<Duration, ReactiveLock> byAcquireTimeout = new ConcurrentHashMap<>();
    private volatile UnaryOperator<String> placeholders = UnaryOperator.identity();
    private volatile @Nullable ReactiveLock lock;

    WithLockInterceptor(ObjectProvider<ReactiveLock> locks) {
        this.locks = locks;
    }

    /** How {@code ${...}} in the durations of the annotations registered from now on are resolved. */
    void resolvePlaceholdersWith(UnaryOperator<String> placeholders) {
        this.placeholders = placeholders;
    }

    /**
     * Checks and remembers {@code method} (the most specific method of a bean class), when its
     * bean is made: its annotation, and its TTL against the lock's bounds (a reactive
     * {@code @Scheduled} method is called while its bean is made, and Spring would report a
     * refused TTL without its message).
     *
     * @throws IllegalStateException naming the method, if it cannot run under a lock as annotated
     *     or the application context has no {@link ReactiveLock} bean
     */
    WithLockMethod register(Method method, WithLock annotation) {
        return methods.computeIfAbsent(method, m -> {
            WithLockMethod resolved = WithLockMethod.of(m, annotation, placeholders);
            try {
                lockFor(resolved).withLock("ttl-check", resolved.ttl(), Mono.empty()); // checks, never subscribed
            } catch (IllegalArgumentException e) {
                throw new IllegalStateException("@WithLock ttl '" + annotation.ttl() + "' of " + WithLockMethod.describe(m)
                        + " is refused by the lock: " + e.getMessage(), e);
            }
            return resolved;
        });
    }

    /** The application's lock, looked up once. */
    private ReactiveLock lock(WithLockMethod method) {
        ReactiveLock found = lock;
        if (found == null) {
            found = locks.getIfAvailable();
            if (found == null) {
                throw new IllegalStateException("@WithLock method " + method.describe()
                        + " needs a ReactiveLock bean, and the application context has none");
            }
            lock = found;
        }
        return found;
    }

    @Override
    public Object invoke(MethodInvocation invocation) {
        WithLockMethod method = method(invocation);
        String name = method.lockName(invocation.getArguments());
        ReactiveLock lock = lockFor(method);
        ProxyMethodInvocation call = (ProxyMethodInvocation) invocation;
        return switch (method.kind()) {
            case FLUX -> LockedCalls.flux(lock, name, method.ttl(), method.lockAtLeastFor(), method.skipWhenBusy(),
                    () -> Flux.<Object>from(proceed(call)));
            case MONO, SUSPEND -> LockedCalls.mono(lock, name, method.ttl(), method.lockAtLeastFor(), method.skipWhenBusy(),
                    () -> Mono.<Object>from(proceed(call)));
        };
    }

    private WithLockMethod method(MethodInvocation invocation) {
        Object target = Objects.requireNonNull(invocation.getThis(), "target");
        Method specific = BridgeMethodResolver.findBridgedMethod(AopUtils.getMostSpecificMethod(invocation.getMethod(), AopUtils.getTargetClass(target)));
        WithLockMethod known = methods.get(specific);
        if (known != null) {
            return known;
        }
        // A bean whose methods were not seen at start-up (made outside the bean factory's post-processing).
        return register(specific, Objects.requireNonNull(AnnotatedElementUtils.findMergedAnnotation(specific, WithLock.class), "@WithLock"));
    }

    private ReactiveLock lockFor(WithLockMethod method) {
        Duration acquireTimeout = method.acquireTimeout();
        if (acquireTimeout == null) {
            return lock(method);
        }
        ReactiveLock view = byAcquireTimeout.get(acquireTimeout);
        if (view == null) {
            view = lock(method).withAcquireTimeout(acquireTimeout);
            byAcquireTimeout.putIfAbsent(acquireTimeout, view);
        }
        return view;
    }

    /** Calls the method (and the advice after this one) again, for one subscription. */
    private static Publisher<?> proceed(ProxyMethodInvocation call) {
        Object result;
        try {
            result = call.invocableClone().proceed();
        } catch (Throwable e) {
            Exceptions.throwIfJvmFatal(e);
            return Mono.error(e);
        }
        if (result == null) {
            return Mono.error(new NullPointerException("@WithLock method " + WithLockMethod.describe(call.getMethod()) + " returned null"));
        }
        return (Publisher<?>) result;
    }
}
