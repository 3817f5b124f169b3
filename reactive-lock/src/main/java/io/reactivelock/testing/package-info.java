/**
 * A test double for code that uses {@link io.reactivelock.ReactiveLock}:
 * {@link io.reactivelock.testing.InMemoryReactiveLock}, with every timer on a Reactor scheduler so
 * that {@code StepVerifier.withVirtualTime} drives it.
 */
@NullMarked
package io.reactivelock.testing;

import org.jspecify.annotations.NullMarked;
