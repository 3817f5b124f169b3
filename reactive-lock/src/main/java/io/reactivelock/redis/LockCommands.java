package io.reactivelock.redis;

import io.reactivelock.spi.LockCore;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * The commands the locks send on one connection: {@link LuaScript}s by {@code EVALSHA} (a
 * {@code NOSCRIPT} reply, after a script cache flush, a restart or on a new Cluster node, falls
 * back to {@code EVAL}, which also caches the script), and the plain {@code SET NX PX}.
 *
 * <p>Returns plain {@link CompletionStage}s rather than {@code Mono}s on purpose: the caller
 * always learns the outcome of a command it sent, even after its own subscriber cancelled, and
 * can release a lock that an abandoned attempt was granted.
 */
final class LockCommands {

    private final RedisClusterAsyncCommands<String, String> commands;

    public LockCommands(RedisClusterAsyncCommands<String, String> commands) {
        this.commands = commands;
    }

    /** Runs a script that returns an integer. */
    public CompletionStage<Long> run(LuaScript script, String[] keys, String... args) {
        CompletionStage<Long> bySha = commands.evalsha(script.sha(), ScriptOutputType.INTEGER, keys, args);
        return bySha.exceptionallyCompose(error -> LockCore.unwrap(error) instanceof RedisNoScriptException
                ? commands.eval(script.source(), ScriptOutputType.INTEGER, keys, args)
                : CompletableFuture.failedStage(LockCore.unwrap(error)));
    }

    /** {@code SET key value NX PX ttlMillis}: whether the key was set (false: it existed). */
    public CompletionStage<Boolean> setIfAbsent(String key, String value, long ttlMillis) {
        return commands.set(key, value, SetArgs.Builder.nx().px(ttlMillis)).thenApply(ok -> ok != null);
    }

    /**
     * The reply of {@code command}, sent at subscription, or a {@link TimeoutException} when none
     * came within {@code timeout} on {@code scheduler}'s clock. Cheaper per command than
     * {@code Mono.timeout}: one timer, disposed by the reply, and no operator chain.
     */
    public static <T> Mono<T> within(Supplier<? extends CompletionStage<T>> command, Duration timeout, Scheduler scheduler) {
        return Mono.create(sink -> {
            CompletableFuture<T> reply = command.get().toCompletableFuture();
            if (!reply.isDone()) {
                Disposable timer = scheduler.schedule(() -> sink.error(LockCore.noReplyWithin(timeout)),
                        timeout.toNanos(), TimeUnit.NANOSECONDS);
                sink.onDispose(timer);
            }
            reply.whenComplete((value, error) -> {
                if (error != null) {
                    sink.error(LockCore.unwrap(error));
                } else {
                    sink.success(value);
                }
            });
        });
    }
}
