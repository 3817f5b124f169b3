@file:JvmName("ReactiveLockCoroutines")

package io.reactivelock.kotlin

import io.reactivelock.LockLease
import io.reactivelock.MultiLockLease
import io.reactivelock.ReactiveLock
import io.reactivelock.ReactiveMultiLock
import io.reactivelock.ReactiveReadWriteLock
import io.reactivelock.ReactiveSemaphore
import java.util.concurrent.atomic.AtomicReference
import java.util.function.Function
import kotlin.time.Duration
import kotlin.time.toJavaDuration
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Job
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.buffer
import kotlinx.coroutines.flow.flow as coldFlow
import kotlinx.coroutines.flow.map
import kotlinx.coroutines.flow.onCompletion
import kotlinx.coroutines.flow.onStart
import kotlinx.coroutines.reactive.asFlow
import kotlinx.coroutines.reactive.asPublisher
import kotlinx.coroutines.reactive.awaitSingle
import kotlinx.coroutines.reactor.mono
import kotlinx.coroutines.withContext
import reactor.core.publisher.Flux
import reactor.core.publisher.Mono

/**
 * Runs [block] while holding the lock [name] and returns its result; the suspending form of
 * [ReactiveLock.withLock], with the same contract:
 *
 * - suspends until the lock is held, then runs [block] in the caller's context (its dispatcher,
 *   its elements, [LockLeases] with this lease added); the lease is renewed while it runs;
 * - [block] returns (null too) or throws: the lock is released, then the same result or exception;
 * - the caller is cancelled while waiting or while [block] runs: the acquisition or the block is
 *   cancelled and the lock released at once, without waiting for [block] to reach a suspension point;
 * - the lease is lost: [block] is cancelled and this throws [io.reactivelock.LockLostException];
 * - the lock stays busy past the acquire timeout: [io.reactivelock.LockAcquisitionException], and
 *   [block] never ran.
 *
 * [block] runs in a coroutine of its own (the Reactor body), so an exception it throws reaches the
 * caller through this call, not through the caller's job. Nested calls for a name the enclosing block
 * holds join it when the lock is a [io.reactivelock.ReentrantReactiveLock]; otherwise they wait.
 * A [java.time.Duration] is passed as `ttl.toKotlinDuration()`: with a Java duration and a lambda,
 * Kotlin picks the Reactor member `withLock` instead.
 *
 * @throws IllegalArgumentException if [name] or [ttl] is refused by the lock, before anything is sent
 */
public suspend fun <T> ReactiveLock.withLock(name: String, ttl: Duration, block: suspend (LockLease) -> T): T =
    locked(block) { body -> withLock(name, ttl.toJavaDuration(), body) }

/**
 * Runs [block] while holding [permits] of the [capacity][ReactiveSemaphore.capacity] permits of the
 * semaphore [name]; the suspending form of [ReactiveSemaphore.withPermits], with the contract of
 * [withLock] (cancellation, lost permits, acquire timeout, [LockLeases]).
 */
public suspend fun <T> ReactiveSemaphore.withPermits(
    name: String, permits: Int, ttl: Duration, block: suspend (LockLease) -> T,
): T = locked(block) { body -> withPermits(name, permits, ttl.toJavaDuration(), body) }

/** Runs [block] as one of the readers of [name]; the suspending [ReactiveReadWriteLock.withReadLock], as [withLock]. */
public suspend fun <T> ReactiveReadWriteLock.withReadLock(name: String, ttl: Duration, block: suspend (LockLease) -> T): T =
    locked(block) { body -> withReadLock(name, ttl.toJavaDuration(), body) }

/** Runs [block] as the one writer of [name]; the suspending [ReactiveReadWriteLock.withWriteLock], as [withLock]. */
public suspend fun <T> ReactiveReadWriteLock.withWriteLock(name: String, ttl: Duration, block: suspend (LockLease) -> T): T =
    locked(block) { body -> withWriteLock(name, ttl.toJavaDuration(), body) }

/**
 * Runs [block] while holding the locks of all of [names]; the suspending
 * [ReactiveMultiLock.withLocks], with the contract of [withLock] ([LockLeases] is not extended:
 * the lease covers several names).
 */
public suspend fun <T> ReactiveMultiLock.withLocks(names: Collection<String>, ttl: Duration, block: suspend (MultiLockLease) -> T): T {
    val caller = currentCoroutineContext().minusKey(Job)
    val body = Function<MultiLockLease, Mono<Outcome<T>>> { lease -> mono(caller) { Outcome(block(lease)) } }
    return withLocks(names, ttl.toJavaDuration(), body).awaitSingle().value
}

/**
 * [block] as the Reactor body that [take] runs under its lock: in the caller's context (without its
 * Job, so that the Mono owns the coroutine instead of the caller), with the lease added to [LockLeases].
 */
private suspend fun <T> locked(
    block: suspend (LockLease) -> T,
    take: (Function<LockLease, Mono<Outcome<T>>>) -> Mono<Outcome<T>>,
): T {
    val caller = currentCoroutineContext().minusKey(Job)
    return take(Function { lease -> mono(caller + LockLeases.inside(caller, lease)) { Outcome(block(lease)) } })
        .awaitSingle().value
}

/**
 * A cold [Flow] that holds the lock [name] while [flow] is collected: each collection takes the lock
 * (as [ReactiveLock.withLockMany]), collects [flow] under it, in the collector's context with this
 * lease added to [LockLeases], then releases it. Values are handed on one at a time without a
 * buffer, and the release waits until the collector has processed the last one, so every value is
 * received and processed while the lock is held. The collector stopping early (`first()`,
 * `take(n)`, cancellation) cancels [flow] and releases the lock at once; a lost lease cancels [flow]
 * and fails the collection with [io.reactivelock.LockLostException].
 *
 * @throws IllegalArgumentException if [name] or [ttl] is refused by the lock, at this call
 */
public fun <T> ReactiveLock.withLockFlow(name: String, ttl: Duration, flow: Flow<T>): Flow<T> {
    val javaTtl = ttl.toJavaDuration()
    withLockMany(name, javaTtl, Function { Flux.empty<Nothing>() }) // checks the arguments now; never subscribed
    return coldFlow {
        val caller = currentCoroutineContext().minusKey(Job)
        val collecting = AtomicReference<CompletableDeferred<Unit>?>()
        try {
            // One value is requested at a time, the next once the collector has processed the last, so
            // End (and with it the body's completion, which releases) comes after every value was processed.
            withLockMany(name, javaTtl, Function { lease ->
                flow.map<T, Step<T>> { Value(it) }
                    .onCompletion { if (it == null) emit(End) }
                    .onStart { collecting.set(CompletableDeferred()) }
                    .onCompletion { collecting.get()?.complete(Unit) }
                    .asPublisher(caller + LockLeases.inside(caller, lease))
            }).asFlow().buffer(Channel.RENDEZVOUS).collect { step ->
                if (step is Value<T>) emit(step.value)
            }
        } finally {
            // [flow] is collected in a coroutine of its own: its end (a cancellation too) comes before this one's.
            collecting.get()?.let { withContext(NonCancellable) { it.await() } }
        }
    }
}

/** What the body of [withLockFlow] passes on: a value of the flow, or its end. */
private sealed interface Step<out T>

private class Value<T>(val value: T) : Step<T>

private data object End : Step<Nothing>

/** A block's result, so that a null one travels through the Mono as a value. */
private class Outcome<T>(val value: T)
