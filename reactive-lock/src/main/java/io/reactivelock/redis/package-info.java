/**
 * The Redis backend: {@link io.reactivelock.redis.ReactiveRedisLock}, the client of one deployment
 * (standalone, Sentinel or Cluster) that hands out every primitive over one pair of connections, and
 * {@link io.reactivelock.redis.ReactiveRedlock}, one lock over several independent masters. Every
 * other type here (stores, Lua scripts, the script executor, release notices, key names) is
 * package-private.
 */
@NullMarked
package io.reactivelock.redis;

import org.jspecify.annotations.NullMarked;
