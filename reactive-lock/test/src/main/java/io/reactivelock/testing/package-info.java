/**
 * Test support for code that uses reactive-lock.
 *
 * <ul>
 *   <li>{@link io.reactivelock.testing.InMemoryReactiveLock}: the in-memory client, a
 *       {@link io.reactivelock.ReactiveLock} that hands out the fair lock, semaphores, the
 *       read-write lock, the multi-lock and leader election on one set of keys, with every timer on
 *       a Reactor scheduler so that {@code StepVerifier.withVirtualTime} drives them. It needs
 *       nothing but reactive-lock and Reactor.
 *   <li>The published contracts, {@link io.reactivelock.testing.ReactiveLockContract},
 *       {@link io.reactivelock.testing.SemaphoreContract} and
 *       {@link io.reactivelock.testing.ReadWriteLockContract}: JUnit Jupiter test classes that a
 *       primitive of your own (a decorator) runs by extending one. They are written with JUnit
 *       Jupiter ({@code junit-jupiter-api}, {@code junit-jupiter-params}), AssertJ
 *       ({@code assertj-core}) and {@code reactor-test}, which this artifact declares
 *       <em>optional</em>: a build that runs the contracts adds those four to its test dependencies.
 * </ul>
 */
@NullMarked
package io.reactivelock.testing;

import org.jspecify.annotations.NullMarked;
