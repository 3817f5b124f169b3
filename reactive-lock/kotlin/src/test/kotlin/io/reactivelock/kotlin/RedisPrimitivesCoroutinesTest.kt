package io.reactivelock.kotlin

import io.reactivelock.LockOptions
import io.reactivelock.redis.ReactiveRedisLock
import io.reactivelock.support.RedisServer
import io.reactivelock.support.WithRedis
import java.time.Duration
import java.util.concurrent.atomic.AtomicInteger
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.assertj.core.api.Assertions.assertThat
import org.junit.jupiter.api.Test

/**
 * The suspending forms of the semaphore, the read-write lock and the multi-lock on a real Redis: each
 * keeps its primitive's exclusion when the blocks suspend (and so hop threads on
 * [Dispatchers.Default]), and a cancelled block leaves nothing held.
 */
@WithRedis
class RedisPrimitivesCoroutinesTest {

    private val options = LockOptions.builder().acquireTimeout(Duration.ofMinutes(1)).build()

    /** Keys of held primitives in Redis; fencing records (which outlive their lock by design) left out. */
    private fun heldKeys(redis: RedisServer): Long = redis.call("EVAL",
        "local n = 0 for _, k in ipairs(redis.call('KEYS', 'lock:*')) do " +
            "if not k:find(':fence', 1, true) then n = n + 1 end end return n", "0").toLong()

    @Test
    fun atMostCapacityBlocksHoldPermitsAtOnce(redis: RedisServer) {
        ReactiveRedisLock.create(redis.uri(), options).use { client ->
            val semaphore = client.semaphore(3)
            val inside = AtomicInteger()
            val mostInside = AtomicInteger()
            runBlocking(Dispatchers.Default) {
                repeat(30) {
                    launch {
                        semaphore.withPermits("exports", 1, 10.seconds) {
                            mostInside.accumulateAndGet(inside.incrementAndGet(), ::maxOf)
                            delay(5.milliseconds) // a fourth holder inside now would raise mostInside above 3
                            inside.decrementAndGet()
                        }
                    }
                }
            }
            assertThat(mostInside.get()).isBetween(1, 3)
            assertThat(heldKeys(redis)).isZero()
        }
    }

    @Test
    fun aWriterBlockNeverRunsBesideAnotherBlock(redis: RedisServer) {
        ReactiveRedisLock.create(redis.uri(), options).use { client ->
            val rw = client.readWriteLock()
            val readers = AtomicInteger()
            val writers = AtomicInteger()
            val seenBeside = AtomicInteger()
            runBlocking(Dispatchers.Default) {
                repeat(40) { i ->
                    launch {
                        if (i % 4 == 0) {
                            rw.withWriteLock("doc", 10.seconds) {
                                writers.incrementAndGet()
                                delay(2.milliseconds)
                                if (readers.get() != 0 || writers.get() != 1) seenBeside.incrementAndGet()
                                writers.decrementAndGet()
                            }
                        } else {
                            rw.withReadLock("doc", 10.seconds) {
                                readers.incrementAndGet()
                                delay(2.milliseconds)
                                if (writers.get() != 0) seenBeside.incrementAndGet()
                                readers.decrementAndGet()
                            }
                        }
                    }
                }
            }
            assertThat(seenBeside.get()).isZero()
            assertThat(heldKeys(redis)).isZero()
        }
    }

    @Test
    fun blocksListingSharedNamesInEitherOrderRunOneAtATime(redis: RedisServer) {
        ReactiveRedisLock.create(redis.uri(), options).use { client ->
            val multi = client.multiLock()
            val inside = AtomicInteger()
            val mostInside = AtomicInteger()
            runBlocking(Dispatchers.Default) {
                repeat(30) { i ->
                    launch {
                        val names = if (i % 2 == 0) listOf("a", "b") else listOf("b", "a")
                        multi.withLocks(names, 10.seconds) { lease ->
                            assertThat(lease.names()).containsExactly("a", "b")
                            mostInside.accumulateAndGet(inside.incrementAndGet(), ::maxOf)
                            delay(2.milliseconds)
                            inside.decrementAndGet()
                        }
                    }
                }
            }
            assertThat(mostInside.get()).isEqualTo(1)
            assertThat(heldKeys(redis)).isZero()
        }
    }

    @Test
    fun aCancelledBlockLeavesNothingHeld(redis: RedisServer) {
        ReactiveRedisLock.create(redis.uri(), options).use { client ->
            val semaphore = client.semaphore(2)
            val rw = client.readWriteLock()
            val multi = client.multiLock()
            run {
                run {
                    val outcomes = runBlocking(Dispatchers.Default) {
                        listOf(
                            runCatching { withTimeout(200.milliseconds) { semaphore.withPermits("s", 1, 30.seconds) { awaitCancellation() } } },
                            runCatching { withTimeout(200.milliseconds) { rw.withWriteLock("w", 30.seconds) { awaitCancellation() } } },
                            runCatching { withTimeout(200.milliseconds) { multi.withLocks(listOf("x", "y"), 30.seconds) { awaitCancellation() } } },
                        )
                    }
                    assertThat(outcomes).allSatisfy { assertThat(it.exceptionOrNull()).isInstanceOf(TimeoutCancellationException::class.java) }
                    // A 30 s lease: gone at once means released, not expired.
                    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(5)).until { heldKeys(redis) == 0L }
                }
            }
        }
    }
}
