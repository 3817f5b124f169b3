/**
 * Test doubles for code that uses {@link io.reactivelock.ReactiveLock},
 * {@link io.reactivelock.ReactiveSemaphore} or {@link io.reactivelock.ReactiveReadWriteLock}:
 * {@link io.reactivelock.testing.InMemoryReactiveLock},
 * {@link io.reactivelock.testing.InMemoryReactiveSemaphore} and
 * {@link io.reactivelock.testing.InMemoryReactiveReadWriteLock}, with every timer on a Reactor
 * scheduler so that {@code StepVerifier.withVirtualTime} drives them.
 */
@NullMarked
package io.reactivelock.testing;

import org.jspecify.annotations.NullMarked;
