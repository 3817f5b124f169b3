package io.reactivelock.spring;

import io.reactivelock.ReactiveLock;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;
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
     * Checks and remembers {@code method} (the most specific method of a bean class), at start-up.
     *
     * @throws IllegalStateException naming the method, if it cannot run under a lock as annotated
     */
    void register(Method method, WithLock annotation) {
        methods.computeIfAbsent(method, m -> WithLockMethod.of(m, annotation, placeholders));
    }

    boolean hasMethods() {
        return !methods.isEmpty();
    }

    /**
     * The application's lock, looked up once.
     *
     * @throws IllegalStateException if the application context has no {@link ReactiveLock} bean
     */
    ReactiveLock lock() {
        ReactiveLock found = lock;
        if (found == null) {
            found = locks.getIfAvailable();
            if (found == null) {
                throw new IllegalStateException("@WithLock methods need a ReactiveLock bean, and the application context has none: "
                        + methods.keySet().stream().map(WithLockMethod::describe).sorted().collect(Collectors.joining(", ")));
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
        WithLock annotation = Objects.requireNonNull(AnnotatedElementUtils.findMergedAnnotation(specific, WithLock.class), "@WithLock");
        return methods.computeIfAbsent(specific, m -> WithLockMethod.of(m, annotation, placeholders));
    }

    private ReactiveLock lockFor(WithLockMethod method) {
        Duration acquireTimeout = method.acquireTimeout();
        if (acquireTimeout == null) {
            return lock();
        }
        ReactiveLock view = byAcquireTimeout.get(acquireTimeout);
        if (view == null) {
            view = lock().withAcquireTimeout(acquireTimeout);
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
