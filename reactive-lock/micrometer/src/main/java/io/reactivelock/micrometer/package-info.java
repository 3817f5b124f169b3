/**
 * Optional Micrometer integration: {@link io.reactivelock.micrometer.LockMetrics} (timers,
 * counters and a gauge, set as the lock's {@link io.reactivelock.LockListener}) and
 * {@link io.reactivelock.micrometer.ObservedReactiveLock} (an {@code Observation} around each
 * {@code withLock}, for traces). Needs {@code io.micrometer:micrometer-core} on the classpath; the
 * rest of the library does not.
 */
@NullMarked
package io.reactivelock.micrometer;

import org.jspecify.annotations.NullMarked;
