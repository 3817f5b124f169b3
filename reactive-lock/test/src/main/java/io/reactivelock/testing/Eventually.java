package io.reactivelock.testing;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicReference;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * Waits in the contracts for what a lock does in the background (a release after a cancel, a
 * renewal): reads the condition every {@link #POLL} on a thread that may block (the subclasses
 * read their store with blocking calls), until it holds or the time is up. Built on Reactor, so
 * that the contracts need no polling library; nothing sleeps.
 */
final class Eventually {

    /** How often the condition is read. */
    static final Duration POLL = Duration.ofMillis(10);

    private Eventually() {}

    /** Returns once {@code condition} is true; fails with {@link AssertionError} if it is not within {@code within}. */
    static void until(Duration within, Callable<Boolean> condition) {
        untilAsserted(within, () -> {
            if (!condition.call()) {
                throw new AssertionError("the condition did not hold within " + within.toMillis() + " ms");
            }
        });
    }

    /** Returns once {@code assertion} passes; rethrows its last failure if it does not within {@code within}. */
    static void untilAsserted(Duration within, Check assertion) {
        AtomicReference<Throwable> last = new AtomicReference<>();
        Boolean passed = Mono.fromCallable(() -> {
                    try {
                        assertion.run();
                        return true;
                    } catch (AssertionError e) {
                        last.set(e);
                        return false;
                    }
                })
                .subscribeOn(Schedulers.boundedElastic())
                .filter(Boolean::booleanValue)
                .repeatWhenEmpty(tries -> tries.delayElements(POLL))
                .timeout(within, Mono.empty())
                .block();
        if (passed == null) {
            Throwable e = last.get();
            throw e instanceof AssertionError failed ? failed
                    : new AssertionError("the condition did not hold within " + within.toMillis() + " ms", e);
        }
    }

    /** An assertion that may throw anything; an {@link AssertionError} means "not yet". */
    @FunctionalInterface
    interface Check {
        /** Throws {@link AssertionError} while the awaited state is not there. */
        void run() throws Exception;
    }
}
