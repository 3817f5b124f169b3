/**
 * A non-blocking distributed lock for Project Reactor on Redis.
 *
 * <p>Start at {@link io.reactivelock.ReactiveRedisLock} and its
 * {@link io.reactivelock.ReactiveLock#withLock withLock} methods; for a leased semaphore,
 * {@link io.reactivelock.ReactiveRedisSemaphore}; for a read-write lock,
 * {@link io.reactivelock.ReactiveRedisReadWriteLock}; for several names at once, all or none,
 * {@link io.reactivelock.ReactiveRedisMultiLock}; for leader election on any of the locks,
 * {@link io.reactivelock.LeaderElection}.
 */
@NullMarked
package io.reactivelock;

import org.jspecify.annotations.NullMarked;
