@file:OptIn(kotlinx.coroutines.ExperimentalCoroutinesApi::class) // the virtual clock of kotlinx-coroutines-test

package io.reactivelock.kotlin

import io.reactivelock.LockLostException
import io.reactivelock.LockOptions
import io.reactivelock.testing.InMemoryReactiveLock
import kotlin.time.Duration.Companion.minutes
import kotlin.time.Duration.Companion.seconds
import kotlin.time.toJavaDuration
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.catch
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.flow.flowOf
import kotlinx.coroutines.flow.map
import kotlinx.coroutines.flow.onCompletion
import kotlinx.coroutines.flow.onEach
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.test.TestScope
import kotlinx.coroutines.test.currentTime
import kotlinx.coroutines.test.runTest
import org.assertj.core.api.Assertions.assertThat
import org.junit.jupiter.api.Test

/** [withLockFlow] on [InMemoryReactiveLock], on the virtual time of `runTest` (see [WithLockVirtualTimeTest]). */
class WithLockFlowVirtualTimeTest {

    private val ttl = 30.seconds

    private fun TestScope.inMemoryLock(): InMemoryReactiveLock =
        InMemoryReactiveLock.create(LockOptions.builder().scheduler(TestScopeScheduler(this)).build())

    /** Three pages, one a second; records whether the lock was held as each was made and when the flow ended. */
    private class Pages(private val locks: InMemoryReactiveLock) {
        val lockedAtEachPage = mutableListOf<Boolean>()
        var ended: Throwable? = null

        fun flow(): Flow<Int> = flow {
            for (page in 1..3) {
                lockedAtEachPage += locks.isLocked("feed")
                emit(page)
                if (page < 3) delay(1.seconds)
            }
        }.onCompletion { ended = it }
    }

    @Test
    fun eachCollectionHoldsTheLockWhileTheFlowIsCollectedAndReleasesItAfter() = runTest {
        val locks = inMemoryLock()
        val pages = Pages(locks)
        val feed = locks.withLockFlow("feed", ttl, pages.flow())
        assertThat(locks.isLocked("feed")).`as`("cold").isFalse()

        assertThat(feed.toList()).containsExactly(1, 2, 3)
        assertThat(pages.lockedAtEachPage).containsExactly(true, true, true)
        assertThat(locks.isLocked("feed")).isFalse()
        assertThat(feed.map { it * 10 }.toList()).`as`("collected again").containsExactly(10, 20, 30)
        assertThat(currentTime).isEqualTo(4.seconds.inWholeMilliseconds)
    }

    @Test
    fun aSlowCollectorReceivesEveryValueWhileTheLockIsStillHeld() = runTest {
        val locks = inMemoryLock()

        val lockedOnReceipt = locks.withLockFlow("feed", ttl, flowOf(1, 2, 3))
            .map { locks.isLocked("feed") }
            .onEach { delay(1.seconds) }
            .toList()

        assertThat(lockedOnReceipt).`as`("no value waits in a buffer after the release").containsExactly(true, true, true)
        assertThat(locks.isLocked("feed")).isFalse()
    }

    @Test
    fun theFlowIsNotCollectedBeforeTheLockIsHeld() = runTest {
        val locks = inMemoryLock()
        locks.lockElsewhere("feed", 5.seconds.toJavaDuration())
        var firstPageAt = -1L
        val feed = locks.withLockFlow("feed", ttl, flow { firstPageAt = currentTime; emit(1) })

        assertThat(feed.toList()).containsExactly(1)
        assertThat(firstPageAt).isEqualTo(5.seconds.inWholeMilliseconds)
    }

    @Test
    fun aCollectorThatStopsEarlyCancelsTheFlowAndReleasesTheLockAtOnce() = runTest {
        val locks = inMemoryLock()
        val pages = Pages(locks)

        assertThat(locks.withLockFlow("feed", ttl, pages.flow()).first()).isEqualTo(1)

        assertThat(locks.isLocked("feed")).isFalse()
        assertThat(locks.activeLeases()).isZero()
        assertThat(pages.ended).`as`("the flow was cancelled").isNotNull()
        assertThat(currentTime).isZero()
    }

    @Test
    fun aLostLeaseCancelsTheFlowAndFailsTheCollectionWithLockLostException() = runTest {
        val locks = inMemoryLock()
        val pages = Pages(locks)
        var failure: Throwable? = null

        val received = locks.withLockFlow("feed", ttl, flow {
            emit(0)
            locks.expire("feed")
            delay(1.minutes)
            emit(1)
        }.onCompletion { pages.ended = it }).catch { failure = it }.toList()

        assertThat(received).containsExactly(0)
        assertThat(failure).isInstanceOf(LockLostException::class.java)
        assertThat(pages.ended).`as`("the flow was cancelled").isNotNull()
        assertThat(currentTime).`as`("found at the next renewal").isEqualTo(10.seconds.inWholeMilliseconds)
    }

    @Test
    fun argumentsAreCheckedWhenTheFlowIsMade() = runTest {
        val locks = inMemoryLock()
        assertThat(runCatching { locks.withLockFlow("", ttl, flow { emit(1) }) }.exceptionOrNull())
            .isInstanceOf(IllegalArgumentException::class.java)
    }
}
