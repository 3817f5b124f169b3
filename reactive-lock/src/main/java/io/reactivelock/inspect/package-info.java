/**
 * Read-only inspection of the locks in Redis, for operators: {@link io.reactivelock.inspect.LockInspector}
 * lists the locks held under a key prefix and shows one lock's holder, lease, fencing token and fair
 * line, with an explicitly enabled administrative force-release.
 */
@NullMarked
package io.reactivelock.inspect;

import org.jspecify.annotations.NullMarked;
