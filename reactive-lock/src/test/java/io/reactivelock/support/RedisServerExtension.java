package io.reactivelock.support;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ExtensionContext.Namespace;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Starts one {@link RedisServer} per test class (shared with its {@code @Nested} classes), injects it
 * into constructors, lifecycle methods and test methods, and closes it after the class.
 *
 * <p>Before each test the server is restarted if an earlier test left it stopped or killed, resumed if
 * left paused, and emptied with {@code FLUSHALL}.
 *
 * <p>In a run of the server matrix ({@code -Dredis.server.optional=true}) on a machine without the
 * server it names, the class is skipped with the reason instead.
 *
 * <p>Register it with {@link WithRedis}, {@code @ExtendWith} or a {@code static} {@code @RegisterExtension} field.
 */
public final class RedisServerExtension
        implements ExecutionCondition, BeforeAllCallback, BeforeEachCallback, AfterAllCallback, ParameterResolver {

    private static final Namespace NAMESPACE = Namespace.create(RedisServerExtension.class);
    private static final String SERVER = "server";

    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
        return new NeedsRedis.Condition().evaluateExecutionCondition(context);
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        server(context);
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        RedisServer server = server(context);
        if (!server.isRunning()) {
            server.restart();
        }
        server.resume();
        server.call("FLUSHALL");
    }

    @Override
    public void afterAll(ExtensionContext context) {
        // remove() looks only at this class's own store: a @Nested class leaves its outer class's server alone.
        RedisServer own = context.getStore(NAMESPACE).remove(SERVER, RedisServer.class);
        if (own != null) {
            own.close();
        }
    }

    @Override
    public boolean supportsParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        return parameterContext.getParameter().getType() == RedisServer.class;
    }

    @Override
    public RedisServer resolveParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        return server(extensionContext);
    }

    /**
     * The server of this class or an enclosing one, started if there is none yet: a constructor of a
     * {@code PER_CLASS} test class is resolved before {@link #beforeAll}.
     */
    private static RedisServer server(ExtensionContext context) {
        return context.getStore(NAMESPACE).computeIfAbsent(SERVER, key -> RedisServer.start(), RedisServer.class);
    }
}
