package io.reactivelock.kotlin.docs

import io.reactivelock.ReactiveLock
import io.reactivelock.kotlin.withLock
import io.reactivelock.kotlin.withLockFlow
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.emitAll
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.flow.flowOf

/**
 * The Kotlin code blocks of README.md and docs/, verbatim: this file is compiled with the module's
 * tests, and `KotlinSnippetsTest` (in examples-webflux) fails when a ```kotlin block of the docs is
 * not found here line for line (imports apart, which must be among this file's). So a block that
 * names an API that does not exist fails the build here, and a block edited in the docs alone fails
 * it there. Above each group: what the blocks take for granted of the application.
 */
@Suppress("unused", "UNUSED_PARAMETER")
class DocSnippets(private val locks: ReactiveLock) {

    class Receipt(val id: String)

    class Charge(val id: String)

    class Page(val number: Int)

    object payments {
        suspend fun charge(order: String): Charge = Charge(order)
    }

    object orders {
        suspend fun markPaid(order: String, charge: Charge, fencingToken: Long): Receipt = Receipt(charge.id)
    }

    fun readPages(feed: String): Flow<Page> = flowOf(Page(1))

    // ---- docs/kotlin.md, "Suspending withLock and a Flow under a lock"

    suspend fun pay(order: String): Receipt =
        locks.withLock("order:$order", 10.seconds) { lease ->   // suspends until held; renewed while the block runs
            val charge = payments.charge(order)                 // suspend calls, on the caller's dispatcher
            orders.markPaid(order, charge, lease.fencingToken())
        }

    // Each collection holds the lock while the pages are read and handed on, then releases it;
    // flow { } builds the pages' Flow only then, under the lock.
    fun pages(feed: String): Flow<Page> = locks.withLockFlow("feed:$feed", 30.seconds, flow { emitAll(readPages(feed)) })
}
