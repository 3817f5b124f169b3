package io.reactivelock.redis;

import io.reactivelock.LockOptions;
import io.reactivelock.spi.Backoff;
import java.util.concurrent.CompletionStage;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * What every Redis store of one client shares: its options, key names, commands, release
 * notices, backoff steps and the waiter lease as a script argument; how a store sends a script
 * it awaits; and how it sends the scripts that grant or renew, which the replicas acknowledge
 * when {@code acks} is given ({@link ReplicaAcks}), else run as every other command.
 */
record StoreContext(LockOptions options, LockKeys keys, LockCommands commands, @Nullable ReplicaAcks acks,
        ReleaseNotices notices, Backoff backoff, String waiterLease) {

    /** The context of a client with {@code options}, sending by {@code commands} (grants through {@code acks}), woken by {@code notices}. */
    static StoreContext of(LockOptions options, LockCommands commands, @Nullable ReplicaAcks acks, ReleaseNotices notices) {
        return new StoreContext(options, new LockKeys(options.keyPrefix()), commands, acks, notices,
                new Backoff(options.minBackoff(), options.maxBackoff(), options.jitter()),
                Long.toString(options.waiterLease().toMillis()));
    }

    /** {@code script}, sent at subscription: failing if no reply comes within the command timeout on {@code timers}' clock. */
    Mono<Long> command(Scheduler timers, LuaScript script, String[] keys, String... args) {
        return LockCommands.within(() -> commands.run(script, keys, args), options.commandTimeout(), timers);
    }

    /**
     * A script that may grant or renew: a reply for which {@code wrote} holds (the script granted
     * or renewed) completes once the replicas acknowledged it, or fails with
     * {@link ReplicaAcks.NotReplicated}.
     */
    CompletionStage<Long> grant(LuaScript script, Predicate<Long> wrote, String[] keys, String... args) {
        ReplicaAcks a = acks;
        return a == null ? commands.run(script, keys, args) : a.run(script, wrote, keys, args);
    }

    /** {@link #grant}, sent at subscription and timed as {@link #command}. */
    Mono<Long> grantCommand(Scheduler timers, LuaScript script, Predicate<Long> wrote, String[] keys, String... args) {
        return LockCommands.within(() -> grant(script, wrote, keys, args), options.commandTimeout(), timers);
    }

    /** The plain {@code SET NX PX} of a grant: a set key completes once acknowledged. */
    CompletionStage<Boolean> setIfAbsent(String key, String value, long ttlMillis) {
        ReplicaAcks a = acks;
        return a == null ? commands.setIfAbsent(key, value, ttlMillis) : a.setIfAbsent(key, value, ttlMillis);
    }
}
