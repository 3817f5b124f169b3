@file:OptIn(kotlinx.coroutines.ExperimentalCoroutinesApi::class) // the virtual clock of kotlinx-coroutines-test

package io.reactivelock.kotlin

import io.reactivelock.LockAcquisitionException
import io.reactivelock.LockLease
import io.reactivelock.LockLostException
import io.reactivelock.LockOptions
import io.reactivelock.ReactiveLock
import io.reactivelock.ReentrantReactiveLock
import io.reactivelock.testing.InMemoryReactiveLock
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.minutes
import kotlin.time.Duration.Companion.seconds
import kotlin.time.toJavaDuration
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.reactive.awaitSingle
import kotlinx.coroutines.test.TestScope
import kotlinx.coroutines.test.currentTime
import kotlinx.coroutines.test.runCurrent
import kotlinx.coroutines.test.runTest
import org.assertj.core.api.Assertions.assertThat
import org.junit.jupiter.api.Test
import reactor.core.publisher.Mono

/**
 * The suspending `withLock` on [InMemoryReactiveLock], on the virtual time of `runTest`: the lock's
 * timers run on a [TestScopeScheduler], so a 10 s acquire timeout or a renewal a third of a 30 s TTL
 * away takes no real time, and [currentTime] tells exactly when something happened.
 */
class WithLockVirtualTimeTest {

    private val ttl = 30.seconds

    /** An in-memory lock with the default options (10 s acquire timeout), its timers on this test's virtual time. */
    private fun TestScope.inMemoryLock(): InMemoryReactiveLock =
        InMemoryReactiveLock.create(LockOptions.builder().scheduler(TestScopeScheduler(this)).build())

    @Test
    fun theBlockRunsUnderTheLockOnTheCallersDispatcherAndItsResultIsReturned() = runTest {
        val locks = inMemoryLock()
        val report = async { locks.withLock("report", ttl) { delay(5.minutes); "report" } }

        delay(4.minutes)
        assertThat(locks.isLocked("report")).`as`("held past its TTL while the block runs").isTrue()
        assertThat(report.await()).isEqualTo("report")
        assertThat(currentTime).`as`("the block's delay ran on virtual time").isEqualTo(5.minutes.inWholeMilliseconds)
        assertThat(locks.isLocked("report")).isFalse()
    }

    @Test
    fun aNullResultIsReturnedAndAnExceptionRethrownAfterTheRelease() = runTest {
        val locks = inMemoryLock()

        val none: String? = locks.withLock("report", ttl) { null }
        assertThat(none).isNull()
        assertThat(locks.isLocked("report")).isFalse()

        val thrown = runCatching { locks.withLock("report", ttl) { throw IllegalStateException("no data") } }
        assertThat(thrown.exceptionOrNull()).isInstanceOf(IllegalStateException::class.java).hasMessage("no data")
        assertThat(locks.isLocked("report")).isFalse()
    }

    @Test
    fun aBusyLockFailsWithLockAcquisitionExceptionExactlyAtTheAcquireTimeoutAndTheBlockNeverRuns() = runTest {
        val locks = inMemoryLock()
        locks.lockElsewhere("report", 5.minutes.toJavaDuration())
        var ran = false

        val thrown = runCatching { locks.withLock("report", ttl) { ran = true } }

        assertThat(thrown.exceptionOrNull()).isInstanceOf(LockAcquisitionException::class.java)
        assertThat(currentTime).isEqualTo(10.seconds.inWholeMilliseconds)
        assertThat(ran).isFalse()
    }

    @Test
    fun aLostLeaseCancelsTheBlockAndThrowsLockLostExceptionAtTheNextRenewal() = runTest {
        val locks = inMemoryLock()
        val blockCancelled = CompletableDeferred<CancellationException>()
        val outcome = async {
            runCatching {
                locks.withLock("report", ttl) {
                    try {
                        awaitCancellation()
                    } catch (e: CancellationException) {
                        blockCancelled.complete(e)
                        throw e
                    }
                }
            }
        }
        runCurrent()
        assertThat(locks.expire("report")).`as`("the block holds the lock").isTrue()

        assertThat(outcome.await().exceptionOrNull()).isInstanceOf(LockLostException::class.java)
        assertThat(currentTime).`as`("a third of the TTL").isEqualTo(10.seconds.inWholeMilliseconds)
        assertThat(blockCancelled.isCompleted).`as`("the block was cancelled").isTrue()
        assertThat(locks.activeLeases()).isZero()
    }

    @Test
    fun cancellingAWaiterTakesItOutOfTheLineSoTheLockIsNeverTakenForIt() = runTest {
        val locks = inMemoryLock()
        locks.lockElsewhere("report", 8.seconds.toJavaDuration())
        var ran = false
        val waiter = launch { locks.withLock("report", ttl) { ran = true } }

        delay(5.seconds)
        waiter.cancel()
        delay(4.seconds) // the other holder's TTL ran out at 8 s: a waiter still in line would have been handed the lock

        assertThat(locks.lockedNames()).isEmpty()
        assertThat(ran).isFalse()
        assertThat(locks.activeLeases()).isZero()
    }

    @Test
    fun cancellingTheCallerWhileTheBlockRunsReleasesTheLockAtOnceAndCancelsTheBlock() = runTest {
        val locks = inMemoryLock()
        val started = CompletableDeferred<Unit>()
        var cleanedUp = false
        val caller = launch {
            locks.withLock("report", ttl) {
                started.complete(Unit)
                try {
                    awaitCancellation()
                } finally {
                    cleanedUp = true
                }
            }
        }
        started.await()

        caller.cancel()
        assertThat(locks.isLocked("report")).`as`("released within cancel()").isFalse()
        assertThat(locks.activeLeases()).isZero()
        runCurrent()
        assertThat(cleanedUp).`as`("the block was cancelled").isTrue()
        assertThat(caller.isCancelled).isTrue()
        assertThat(currentTime).isZero()
    }

    @Test
    fun theLeaseIsInTheContextOfTheBlockAndOfTheCoroutinesItStarts() = runTest {
        val locks = inMemoryLock()
        suspend fun leaseOf(name: String): LockLease? = currentCoroutineContext()[LockLeases]?.get(name)

        locks.withLock("order:42", ttl) { order ->
            assertThat(leaseOf("order:42")).isSameAs(order)
            locks.withLock("stock:7", ttl) { stock ->
                coroutineScope {
                    launch {
                        assertThat(leaseOf("order:42")).isSameAs(order)
                        assertThat(leaseOf("stock:7")).isSameAs(stock)
                    }
                }
            }
            assertThat(leaseOf("stock:7")).`as`("only inside its own block").isNull()
        }
        assertThat(currentCoroutineContext()[LockLeases]).isNull()
    }

    @Test
    fun withAReentrantLockANestedCallForAHeldNameJoinsTheHeldLease() = runTest {
        val locks = ReentrantReactiveLock.of(inMemoryLock())
        var reactorJoined: LockLease? = null
        var childJoined: LockLease? = null

        val fencingTokens = locks.withLock("order:42", ttl) { outer ->
            reactorJoined = locks.withLock("order:42", ttl.toJavaDuration()) { lease -> Mono.just(lease) }.awaitSingle()
            coroutineScope { launch { childJoined = locks.withLock("order:42", ttl) { it } } }
            locks.withLock("order:42", ttl) { inner -> listOf(outer.fencingToken(), inner.fencingToken()) }
        }

        assertThat(fencingTokens[1]).`as`("the inner call ran with the outer lease").isEqualTo(fencingTokens[0])
        assertThat(reactorJoined?.fencingToken()).`as`("a Reactor withLock awaited in the block").isEqualTo(fencingTokens[0])
        assertThat(childJoined?.fencingToken()).`as`("a coroutine started in the block").isEqualTo(fencingTokens[0])
        assertThat(currentTime).`as`("nobody waited").isZero()
    }

    @Test
    fun withAReentrantLockAnUnrelatedCoroutineStillWaitsForTheHolder() = runTest {
        val locks = ReentrantReactiveLock.of(inMemoryLock())
        val holder = async { locks.withLock("order:42", ttl) { delay(3.seconds); currentTime } }
        runCurrent()

        val otherStart = locks.withLock("order:42", ttl) { currentTime }

        assertThat(holder.await()).isEqualTo(3.seconds.inWholeMilliseconds)
        assertThat(otherStart).isEqualTo(3.seconds.inWholeMilliseconds)
    }

    @Test
    fun withoutReentrancyANestedCallForAHeldNameWaitsForItselfUntilTheAcquireTimeout() = runTest {
        val locks: ReactiveLock = inMemoryLock()

        val thrown = runCatching { locks.withLock("order:42", ttl) { locks.withLock("order:42", ttl) { } } }

        assertThat(thrown.exceptionOrNull()).isInstanceOf(LockAcquisitionException::class.java)
        assertThat(currentTime).isEqualTo(10.seconds.inWholeMilliseconds)
    }

    @Test
    fun argumentsAreCheckedAtTheCall() = runTest {
        val locks = inMemoryLock()
        assertThat(runCatching { locks.withLock("", ttl) { } }.exceptionOrNull())
            .isInstanceOf(IllegalArgumentException::class.java)
        assertThat(runCatching { locks.withLock("report", 1.milliseconds) { } }.exceptionOrNull())
            .isInstanceOf(IllegalArgumentException::class.java)
    }
}
