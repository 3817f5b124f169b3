package io.reactivelock.spring;

import io.reactivelock.ReactiveLock;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.KotlinDetector;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.PropertyAccessor;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.expression.spel.support.ReflectivePropertyAccessor;
import org.springframework.expression.spel.support.StandardEvaluationContext;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A {@link WithLock} method, checked and resolved once at start-up: what it returns, its parsed
 * name expression with the parameter names, and its durations. Everything a call needs that does
 * not depend on the arguments is here, so that a call does no parsing and no reflection on the
 * method.
 */
final class WithLockMethod {

    /** What the method returns, which decides how it runs under the lock. */
    enum Kind {
        MONO, FLUX, SUSPEND
    }

    private static final SpelExpressionParser PARSER = new SpelExpressionParser();

    private final Method method;
    private final Kind kind;
    private final String nameText;
    private final Expression name;
    /** Parameter names, those of the Kotlin continuation excluded; {@code null} when the class file has none. */
    private final String @Nullable [] parameterNames;
    private final int parameters;
    /** One per method, so that its cache of property readers lives as long as the method's proxy. */
    private final List<PropertyAccessor> accessors = List.of(new ReflectivePropertyAccessor());
    private final Duration ttl;
    private final @Nullable Duration acquireTimeout;
    private final WithLock.OnBusy onBusy;
    private final Duration lockAtLeastFor;

    private WithLockMethod(Method method, WithLock annotation, UnaryOperator<String> placeholders) {
        this.method = method;
        this.kind = kindOf(method);
        this.nameText = annotation.name();
        this.name = parse(method, annotation.name());
        this.parameters = kind == Kind.SUSPEND ? method.getParameterCount() - 1 : method.getParameterCount();
        String[] names = new DefaultParameterNameDiscoverer().getParameterNames(method);
        this.parameterNames = names == null ? null : Arrays.copyOf(names, Math.min(names.length, parameters));
        this.ttl = duration(method, "ttl", annotation.ttl(), placeholders);
        if (ttl.toMillis() < ReactiveLock.MIN_TTL_MILLIS) {
            throw invalid(method, "ttl", annotation.ttl(), "is below " + ReactiveLock.MIN_TTL_MILLIS + " ms");
        }
        this.acquireTimeout = annotation.acquireTimeout().isEmpty() ? null
                : duration(method, "acquireTimeout", annotation.acquireTimeout(), placeholders);
        this.onBusy = annotation.onBusy();
        this.lockAtLeastFor = annotation.lockAtLeastFor().isEmpty() ? Duration.ZERO
                : duration(method, "lockAtLeastFor", annotation.lockAtLeastFor(), placeholders);
    }

    /**
     * Checks and resolves {@code method}; {@code placeholders} resolves {@code ${...}} in the
     * durations.
     *
     * @throws IllegalStateException naming the method, if it does not return a {@code Mono} or
     *     {@code Flux} and is no suspend function, or an attribute is invalid
     */
    static WithLockMethod of(Method method, WithLock annotation, UnaryOperator<String> placeholders) {
        return new WithLockMethod(method, annotation, placeholders);
    }

    /** {@code com.example.Orders.pay(Order)}: how messages name a method. */
    static String describe(Method method) {
        return method.getDeclaringClass().getName() + "." + method.getName()
                + Arrays.stream(method.getParameterTypes()).map(Class::getSimpleName).collect(Collectors.joining(", ", "(", ")"));
    }

    /** This method, as {@link #describe(Method)} names it. */
    String describe() {
        return describe(method);
    }

    Kind kind() {
        return kind;
    }

    Duration ttl() {
        return ttl;
    }

    /** The acquire timeout of the annotation; {@code null}: the lock's own. */
    @Nullable Duration acquireTimeout() {
        return acquireTimeout;
    }

    boolean skipWhenBusy() {
        return onBusy == WithLock.OnBusy.SKIP;
    }

    Duration lockAtLeastFor() {
        return lockAtLeastFor;
    }

    /**
     * The lock name for the arguments of one call.
     *
     * @throws LockNameEvaluationException if the expression fails or gives {@code null}
     */
    String lockName(@Nullable Object[] arguments) {
        StandardEvaluationContext context = new StandardEvaluationContext();
        context.setPropertyAccessors(accessors);
        for (int i = 0; i < parameters; i++) {
            context.setVariable("p" + i, arguments[i]);
            context.setVariable("a" + i, arguments[i]);
            if (parameterNames != null && i < parameterNames.length) {
                context.setVariable(parameterNames[i], arguments[i]);
            }
        }
        String value;
        try {
            value = name.getValue(context, String.class);
        } catch (RuntimeException e) {
            throw new LockNameEvaluationException(method, nameText, "failed: " + e.getMessage(), e);
        }
        if (value == null) {
            throw new LockNameEvaluationException(method, nameText, "gave null", null);
        }
        return value;
    }

    private static Kind kindOf(Method method) {
        if (KotlinDetector.isSuspendingFunction(method)) {
            return Kind.SUSPEND;
        }
        Class<?> type = method.getReturnType();
        if (type == Mono.class) {
            return Kind.MONO;
        }
        if (type == Flux.class) {
            return Kind.FLUX;
        }
        throw new IllegalStateException("@WithLock method " + describe(method) + " returns " + type.getName()
                + ": only a method returning Mono or Flux, or a Kotlin suspend function, can wait for a lock without"
                + " blocking");
    }

    private static Expression parse(Method method, String text) {
        try {
            return PARSER.parseExpression(text);
        } catch (ParseException e) {
            throw invalid(method, "name", text, "is not a SpEL expression: " + e.getMessage());
        }
    }

    private static Duration duration(Method method, String attribute, String text, UnaryOperator<String> placeholders) {
        Duration duration;
        try {
            duration = DurationStyle.detectAndParse(placeholders.apply(text));
        } catch (RuntimeException e) {
            throw invalid(method, attribute, text, "is not a duration (500ms, 30s, PT1M): " + e.getMessage());
        }
        if (duration.isNegative()) {
            throw invalid(method, attribute, text, "is negative");
        }
        return duration;
    }

    private static IllegalStateException invalid(Method method, String attribute, String text, String problem) {
        return new IllegalStateException("@WithLock " + attribute + " '" + text + "' of " + describe(method) + " " + problem);
    }
}
