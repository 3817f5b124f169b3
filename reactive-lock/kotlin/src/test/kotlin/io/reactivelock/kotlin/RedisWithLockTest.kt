package io.reactivelock.kotlin

import io.reactivelock.LockAcquisitionException
import io.reactivelock.LockLostException
import io.reactivelock.LockOptions
import io.reactivelock.redis.ReactiveRedisLock
import io.reactivelock.support.RedisServer
import io.reactivelock.support.WithRedis
import java.time.Duration
import java.util.concurrent.atomic.AtomicInteger
import kotlin.random.Random
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.minutes
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.sync.Semaphore
import kotlinx.coroutines.withTimeout
import org.assertj.core.api.Assertions.assertThat
import org.awaitility.Awaitility.await
import org.junit.jupiter.api.Test

/**
 * The suspending `withLock` on a real Redis (the library's test harness starts a `redis-server`).
 * The coroutines under test run on [Dispatchers.Default], whose threads BlockHound polices here;
 * the test's own blocking calls to Redis stay on the JUnit thread.
 */
@WithRedis
class RedisWithLockTest {

    /** Lock keys in Redis, fencing counters (which outlive their lock by design) left out. */
    private fun lockKeys(redis: RedisServer): Long = redis.call("EVAL",
        "local n = 0 for _, k in ipairs(redis.call('KEYS', 'lock:*')) do " +
            "if not k:find(':fence', 1, true) then n = n + 1 end end return n", "0").toLong()

    @Test
    fun coroutinesOnTwoClientsRunTheirBlocksOneAtATime(redis: RedisServer) {
        val options = LockOptions.builder().acquireTimeout(Duration.ofMinutes(1)).build()
        val clients = listOf(ReactiveRedisLock.create(redis.uri(), options), ReactiveRedisLock.create(redis.uri(), options))
        val inside = AtomicInteger()
        val mostInside = AtomicInteger()
        val counter = AtomicInteger()
        try {
            runBlocking(Dispatchers.Default) {
                repeat(100) { i ->
                    launch {
                        clients[i % 2].withLock("counter", 10.seconds) {
                            mostInside.accumulateAndGet(inside.incrementAndGet(), ::maxOf)
                            val read = counter.get()
                            delay(1.milliseconds) // another holder inside now would write over this increment
                            counter.set(read + 1)
                            inside.decrementAndGet()
                        }
                    }
                }
            }
            assertThat(mostInside.get()).isEqualTo(1)
            assertThat(counter.get()).isEqualTo(100)
            assertThat(lockKeys(redis)).isZero()
        } finally {
            clients.forEach(ReactiveRedisLock::close)
        }
    }

    /**
     * 5,000 `withLock` coroutines, 64 at a time on 32 names, each cancelled at a random moment: a
     * third within 3 ms of its start (mostly while acquiring), a third within 80 ms, a third within
     * 30 ms of entering its block (which runs up to 60 ms). Within 5 s (a stated slack for a busy
     * machine; about half a second measured) no lock key is left and no renewal runs; with a one-minute
     * TTL that is release, not expiry. Renewals every 20 ms, so
     * cancelled blocks really had watchdogs.
     */
    @Test
    fun aCancelStormLeavesNoLockKeyAndNoRenewalRunning(redis: RedisServer) {
        val lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
            .backoff(Duration.ofMillis(1), Duration.ofMillis(5)).renewalInterval(Duration.ofMillis(20)).build())
        val cancelledWaiting = AtomicInteger()
        val cancelledInBlock = AtomicInteger()
        val mostLeasesAtOnce = AtomicInteger()
        try {
            val start = System.nanoTime()
            runBlocking(Dispatchers.Default) {
                val sampler = launch {
                    while (true) {
                        mostLeasesAtOnce.accumulateAndGet(lock.activeLeases(), ::maxOf)
                        delay(1.milliseconds)
                    }
                }
                coroutineScope {
                    val inFlight = Semaphore(64)
                    repeat(5_000) { i ->
                        inFlight.acquire()
                        launch {
                            val entered = CompletableDeferred<Boolean>()
                            // Undispatched: the call is in withLock before anything can cancel it.
                            val call = launch(start = CoroutineStart.UNDISPATCHED) {
                                try {
                                    lock.withLock("storm:${Random.nextInt(32)}", 1.minutes) {
                                        entered.complete(true)
                                        try {
                                            delay(Random.nextLong(60).milliseconds)
                                        } catch (e: CancellationException) {
                                            cancelledInBlock.incrementAndGet()
                                            throw e
                                        }
                                    }
                                } catch (_: LockAcquisitionException) {
                                    // gave up waiting: not part of the storm's claim
                                } finally {
                                    entered.complete(false)
                                }
                            }
                            when (i % 3) {
                                0 -> delay(Random.nextLong(3).milliseconds)
                                1 -> delay(Random.nextLong(80).milliseconds)
                                else -> if (entered.await()) delay(Random.nextLong(30).milliseconds)
                            }
                            call.cancel()
                            call.join()
                            if (call.isCancelled && !entered.await()) {
                                cancelledWaiting.incrementAndGet()
                            }
                            inFlight.release()
                        }
                    }
                }
                sampler.cancel()
            }
            val stormEnded = System.nanoTime()

            await().atMost(Duration.ofSeconds(5)).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(10))
                .untilAsserted {
                    assertThat(lock.activeLeases()).`as`("renewals running").isZero()
                    assertThat(lockKeys(redis)).`as`("lock keys left").isZero()
                }
            println("[kotlin] cancel storm: 5000 coroutines in ${(stormEnded - start) / 1_000_000} ms; " +
                "cancelled while waiting ${cancelledWaiting.get()}, in the block ${cancelledInBlock.get()}; " +
                "clean ${(System.nanoTime() - stormEnded) / 1_000_000} ms after; most leases at once ${mostLeasesAtOnce.get()}")
            assertThat(cancelledWaiting.get()).`as`("coroutines cancelled while acquiring").isPositive()
            assertThat(cancelledInBlock.get()).`as`("coroutines cancelled in their block").isPositive()
            assertThat(mostLeasesAtOnce.get()).`as`("blocks with watchdogs were running").isPositive()
        } finally {
            lock.close()
        }
    }

    @Test
    fun aLostLeaseCancelsTheBlockAndThrowsLockLostExceptionAtTheNextRenewal(redis: RedisServer) {
        val renewal = Duration.ofMillis(100)
        val slack = Duration.ofSeconds(1)
        val lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder().renewalInterval(renewal).build())
        try {
            runBlocking {
                val started = CompletableDeferred<Unit>()
                val blockCancelled = CompletableDeferred<Unit>()
                val outcome = async(Dispatchers.Default) {
                    runCatching {
                        lock.withLock("report", 30.seconds) {
                            started.complete(Unit)
                            try {
                                awaitCancellation()
                            } finally {
                                blockCancelled.complete(Unit)
                            }
                        }
                    }
                }
                started.await()

                val lostAt = System.nanoTime()
                assertThat(redis.call("DEL", "lock:{report}")).`as`("the block held the key").isEqualTo("1")
                val thrown = outcome.await().exceptionOrNull()
                val toldAfter = Duration.ofNanos(System.nanoTime() - lostAt)

                assertThat(thrown).isInstanceOf(LockLostException::class.java)
                assertThat((thrown as LockLostException).lockName()).isEqualTo("report")
                println("[kotlin] lost lease: LockLostException ${toldAfter.toMillis()} ms after the key was deleted")
                assertThat(toldAfter).`as`("told at the next renewal").isLessThan(renewal.plus(slack))
                withTimeout(10.seconds) { blockCancelled.await() } // fails here if the block is never cancelled
                assertThat(lock.activeLeases()).isZero()
            }
        } finally {
            lock.close()
        }
    }
}
