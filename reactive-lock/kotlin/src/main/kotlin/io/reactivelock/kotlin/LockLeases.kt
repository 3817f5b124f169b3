package io.reactivelock.kotlin

import io.reactivelock.LockLease
import kotlin.coroutines.AbstractCoroutineContextElement
import kotlin.coroutines.CoroutineContext

/**
 * The leases held by the enclosing [withLock] blocks of a coroutine, by lock name: code called from
 * a block reads the fencing token without being handed the lease.
 *
 * ```kotlin
 * suspend fun markPaid(order: String) {
 *     val lease = currentCoroutineContext()[LockLeases]?.get("order:$order") ?: error("not locked")
 *     orders.markPaid(order, lease.fencingToken())
 * }
 * ```
 *
 * A block's context (and so the context of the coroutines it starts) carries its own lease and those
 * of the blocks around it; a lease read here is only held while its block runs.
 */
public class LockLeases private constructor(private val byName: Map<String, LockLease>) :
    AbstractCoroutineContextElement(Key) {

    /** The key of this element in a coroutine context. */
    public companion object Key : CoroutineContext.Key<LockLeases> {
        internal fun inside(context: CoroutineContext, lease: LockLease): LockLeases =
            LockLeases(context[Key]?.byName.orEmpty() + (lease.name() to lease))
    }

    /** The lease of the enclosing block that holds the lock [name], or null if none does. */
    public operator fun get(name: String): LockLease? = byName[name]

    /** The names of the locks the enclosing blocks hold. */
    public val names: Set<String> get() = byName.keys

    override fun toString(): String = "LockLeases$names"
}
