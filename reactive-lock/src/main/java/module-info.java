/**
 * reactive-lock: a non-blocking distributed lock for Project Reactor on Redis. Exports the API
 * packages only; {@code io.reactivelock.internal} (the acquisition core, scripts, notices) is not
 * exported, so users cannot come to depend on it.
 */
module io.reactivelock {
    requires transitive reactor.core;
    requires transitive lettuce.core;
    requires transitive org.jspecify;
    requires transitive org.reactivestreams;
    requires static micrometer.core;
    requires static micrometer.observation;
    requires static spring.aop;
    requires static spring.beans;
    requires static spring.boot.actuator;
    requires static spring.boot.actuator.autoconfigure;
    requires static spring.boot;
    requires static spring.boot.autoconfigure;
    requires static spring.context;
    requires static spring.core;
    requires static spring.expression;

    exports io.reactivelock;
    exports io.reactivelock.inspect;
    exports io.reactivelock.micrometer;
    exports io.reactivelock.redlock;
    exports io.reactivelock.spring;
    exports io.reactivelock.testing;

    opens io.reactivelock.spring to spring.core, spring.beans, spring.context;
}
