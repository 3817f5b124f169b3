package io.reactivelock.redis;

import io.reactivelock.LockOptions;
import io.reactivelock.spi.Backoff;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * What every Redis store of one client shares: its options, key names, commands, release
 * notices, backoff steps and the waiter lease as a script argument; and how a store sends a
 * script it awaits.
 */
record StoreContext(LockOptions options, LockKeys keys, LockCommands commands, ReleaseNotices notices, Backoff backoff,
        String waiterLease) {

    /** The context of a client with {@code options}, sending by {@code commands}, woken by {@code notices}. */
    static StoreContext of(LockOptions options, LockCommands commands, ReleaseNotices notices) {
        return new StoreContext(options, new LockKeys(options.keyPrefix()), commands, notices,
                new Backoff(options.minBackoff(), options.maxBackoff(), options.jitter()),
                Long.toString(options.waiterLease().toMillis()));
    }

    /** {@code script}, sent at subscription: failing if no reply comes within the command timeout on {@code timers}' clock. */
    Mono<Long> command(Scheduler timers, LuaScript script, String[] keys, String... args) {
        return LockCommands.within(() -> commands.run(script, keys, args), options.commandTimeout(), timers);
    }
}
