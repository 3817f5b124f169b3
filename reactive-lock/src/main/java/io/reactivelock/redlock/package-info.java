/**
 * Redlock: one lock over several independent Redis masters, held while a majority of them hold
 * it, so that it survives the loss of a minority. See {@link io.reactivelock.redlock.RedlockLock}.
 */
@NullMarked
package io.reactivelock.redlock;

import org.jspecify.annotations.NullMarked;
