/**
 * reactive-lock: a non-blocking distributed lock for Project Reactor on Redis. Exports the API
 * packages only; {@code io.reactivelock.internal} (the acquisition core, scripts, notices) is
 * exported to nobody but the in-memory test doubles of reactive-lock-test, which are stores on the
 * same core, so users cannot come to depend on it.
 */
module io.reactivelock {
    requires transitive reactor.core;
    requires transitive lettuce.core;
    requires transitive org.jspecify;
    requires transitive org.reactivestreams;

    exports io.reactivelock;
    exports io.reactivelock.inspect;
    exports io.reactivelock.redlock;
    exports io.reactivelock.internal to io.reactivelock.testing;
}
