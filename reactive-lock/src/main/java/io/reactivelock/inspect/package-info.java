/**
 * Read-only inspection of the locks in a store, for operators: {@link io.reactivelock.inspect.LockInspector}
 * (from a client's {@code inspector()}) lists the names held under its key prefix (as locks, semaphores or read-write locks) and shows one
 * name's lock holder, lease, fencing token and fair line, its semaphore's holders and its read-write
 * lock's writer, readers and waiting writers, with an explicitly enabled administrative
 * force-release.
 */
@NullMarked
package io.reactivelock.inspect;

import org.jspecify.annotations.NullMarked;
