/**
 * The part of the multi-lock that every implementation shares ({@link io.reactivelock.ReactiveRedisMultiLock},
 * {@link io.reactivelock.testing.InMemoryReactiveMultiLock}): the checks of the names, their order
 * and the lease the body sees. Not exported, not public API; it belongs in
 * {@code io.reactivelock.internal}, next to the core it wraps.
 */
@NullMarked
package io.reactivelock.multilock;

import org.jspecify.annotations.NullMarked;
