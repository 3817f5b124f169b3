/**
 * Fault-injection tests: what a user of the lock observes when Redis, the network or the client
 * misbehaves, checked against a history of critical sections where exclusion is at stake.
 */
@NullMarked
package io.reactivelock.faults;

import org.jspecify.annotations.NullMarked;
