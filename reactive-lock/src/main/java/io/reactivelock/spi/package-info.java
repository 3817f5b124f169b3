/**
 * The engine every primitive runs on, and the interface a new backend implements.
 *
 * <p>{@link io.reactivelock.spi.LockCore} owns the life of an acquisition (token, states, admission,
 * acquire timeout, retries and wake-ups, {@code usingWhen}, renewal, release-once, late grants,
 * background releases, listener events). A backend writes a {@link io.reactivelock.spi.LockStore}
 * (acquire, renew, release, release what an abandoned acquisition may hold, pause), which opens
 * its state of each acquisition from a {@link io.reactivelock.spi.Request} and may wake a waiter
 * through its {@link io.reactivelock.spi.Waiter}; it builds one
 * core per primitive over its stores, and hands out the views of
 * {@link io.reactivelock.spi.Primitives}; it inherits every guarantee of the API's contracts and
 * proves it by passing the published contract tests of {@code reactive-lock-test}. The Redis client
 * and the in-memory client of {@code reactive-lock-test} are both built this way.
 */
@NullMarked
package io.reactivelock.spi;

import org.jspecify.annotations.NullMarked;
