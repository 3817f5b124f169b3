/**
 * reactive-lock-micrometer: meters ({@code LockMetrics}, a {@code LockListener}) and an
 * {@code Observation} per {@code withLock} ({@code ObservedReactiveLock}) for the locks of
 * reactive-lock.
 */
module io.reactivelock.micrometer {
    requires transitive io.reactivelock;
    requires transitive micrometer.core;
    requires transitive micrometer.observation;

    exports io.reactivelock.micrometer;
}
