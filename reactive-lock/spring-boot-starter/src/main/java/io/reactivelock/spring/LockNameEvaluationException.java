package io.reactivelock.spring;

import java.lang.reflect.Method;
import org.jspecify.annotations.Nullable;

/**
 * The {@link WithLock#name()} expression of a method could not give a lock name for the arguments
 * of a call: evaluating it failed (the cause says why), or it gave {@code null}. Thrown by the
 * call, before anything is locked or the method runs.
 */
public final class LockNameEvaluationException extends IllegalArgumentException {

    private static final long serialVersionUID = 1L;

    private final String expression;
    private final String method;

    LockNameEvaluationException(Method method, String expression, String problem, @Nullable Throwable cause) {
        super("@WithLock name '" + expression + "' of " + WithLockMethod.describe(method) + " " + problem, cause);
        this.expression = expression;
        this.method = WithLockMethod.describe(method);
    }

    /** The expression, as written in the annotation. */
    public String expression() {
        return expression;
    }

    /** The annotated method, as {@code com.example.Orders.pay(Order)}. */
    public String method() {
        return method;
    }
}
