package io.reactivelock.support;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Marks a test class that starts its own servers (a Cluster, a Sentinel set, several masters):
 * skipped as a whole, with the reason, where the chosen server cannot run (the fast tier, a server of
 * the matrix absent from this machine), as {@link WithRedis} classes are.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ExtendWith(NeedsRedis.Condition.class)
public @interface NeedsRedis {

    /** Disables the class while {@link RedisBinary#absence()} gives a reason. */
    final class Condition implements ExecutionCondition {
        @Override
        public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
            return RedisBinary.absence().map(ConditionEvaluationResult::disabled)
                    .orElseGet(() -> ConditionEvaluationResult.enabled("the server is on this machine"));
        }
    }
}
