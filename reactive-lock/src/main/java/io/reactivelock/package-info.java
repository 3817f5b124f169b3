/**
 * The API of reactive-lock, a non-blocking distributed lock for Project Reactor: the primitives
 * ({@link io.reactivelock.ReactiveLock}, {@link io.reactivelock.ReactiveSemaphore},
 * {@link io.reactivelock.ReactiveReadWriteLock}, {@link io.reactivelock.ReactiveMultiLock},
 * {@link io.reactivelock.LeaderElection}), their lease, options, listener and errors.
 *
 * <p>Get the primitives from a client: {@link io.reactivelock.redis.ReactiveRedisLock} for Redis,
 * or the in-memory client of {@code reactive-lock-test} in tests.
 */
@NullMarked
package io.reactivelock;

import org.jspecify.annotations.NullMarked;
