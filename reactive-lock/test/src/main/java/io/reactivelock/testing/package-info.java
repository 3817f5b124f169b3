/**
 * Test doubles for code that uses {@link io.reactivelock.ReactiveLock},
 * {@link io.reactivelock.ReactiveSemaphore}, {@link io.reactivelock.ReactiveReadWriteLock} or
 * {@link io.reactivelock.ReactiveMultiLock}: {@link io.reactivelock.testing.InMemoryReactiveLock},
 * {@link io.reactivelock.testing.InMemoryReactiveSemaphore},
 * {@link io.reactivelock.testing.InMemoryReactiveReadWriteLock} and
 * {@link io.reactivelock.testing.InMemoryReactiveMultiLock}, with every timer on a Reactor
 * scheduler so that {@code StepVerifier.withVirtualTime} drives them.
 */
@NullMarked
package io.reactivelock.testing;

import org.jspecify.annotations.NullMarked;
