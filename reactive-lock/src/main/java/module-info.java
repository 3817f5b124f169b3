/**
 * reactive-lock: a non-blocking distributed lock for Project Reactor on Redis. Exports the API
 * ({@code io.reactivelock}, {@code io.reactivelock.inspect}), the engine and store interface a new
 * backend implements ({@code io.reactivelock.spi}), and the Redis client
 * ({@code io.reactivelock.redis}, whose only public types are the clients, their options and the
 * Netty customizer of their connections).
 */
module io.reactivelock {
    requires transitive reactor.core;
    requires transitive lettuce.core;
    requires transitive io.netty.transport;
    requires io.netty.common;
    requires io.netty.handler;
    requires transitive org.jspecify;
    requires transitive org.reactivestreams;

    exports io.reactivelock;
    exports io.reactivelock.inspect;
    exports io.reactivelock.spi;
    exports io.reactivelock.redis;
}
