/**
 * Read-only inspection of the locks in Redis, for operators: {@link io.reactivelock.inspect.LockInspector}
 * lists the names held under a key prefix (as locks, semaphores or read-write locks) and shows one
 * name's lock holder, lease, fencing token and fair line, its semaphore's holders and its read-write
 * lock's writer, readers and waiting writers, with an explicitly enabled administrative
 * force-release.
 */
@NullMarked
package io.reactivelock.inspect;

import org.jspecify.annotations.NullMarked;
