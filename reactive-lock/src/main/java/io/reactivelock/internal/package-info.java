/** Implementation details shared by the lock implementations: not public API, may change at any time. */
@NullMarked
package io.reactivelock.internal;

import org.jspecify.annotations.NullMarked;
