package io.reactivelock.kotlin

import io.lettuce.core.RedisClient
import io.lettuce.core.api.StatefulRedisConnection
import io.reactivelock.LockAcquisitionException
import io.reactivelock.LockLostException
import io.reactivelock.ReactiveLock
import io.reactivelock.redis.ReactiveRedisLock
import io.reactivelock.spring.ReactiveLockAnnotationAutoConfiguration
import io.reactivelock.spring.WithLock
import io.reactivelock.support.RedisServer
import io.reactivelock.support.WithRedis
import java.time.Duration
import java.util.concurrent.CopyOnWriteArrayList
import java.util.function.Supplier
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.launch
import kotlinx.coroutines.reactive.awaitSingle
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import org.assertj.core.api.Assertions.assertThat
import org.awaitility.Awaitility.await
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Test
import org.springframework.boot.autoconfigure.ImportAutoConfiguration
import org.springframework.context.annotation.AnnotationConfigApplicationContext
import org.springframework.context.annotation.Configuration
import org.springframework.scheduling.annotation.EnableScheduling
import org.springframework.scheduling.annotation.Scheduled

/**
 * A Spring service written with coroutines, as an application would write it: the suspending
 * `withLock` where the code needs the lease, `@WithLock` on a `suspend` function where it does
 * not, and a scheduled `suspend` job under a lock; on a real Redis. The service's class and the
 * annotated functions are `open` (the `kotlin-spring` compiler plugin does that for `@Component`
 * classes), so that Spring can proxy them.
 */
@WithRedis
class SpringCoroutinesExampleTest {

    /** What the service writes to, with a gate that keeps a write (and so its lock) open until the test opens it. */
    class Ledger(private val redis: StatefulRedisConnection<String, String>) {
        val gate = CompletableDeferred<Unit>()
        val fences = CopyOnWriteArrayList<Long>()
        val checks = CopyOnWriteArrayList<Long>()

        suspend fun write(order: String, fence: Long): Long {
            gate.await()
            fences += fence
            return fence
        }

        suspend fun isLocked(name: String): Long = redis.reactive().exists("lock:{$name}").awaitSingle()
    }

    /** The example service. */
    open class Orders(private val locks: ReactiveLock, private val ledger: Ledger) {

        /** The coroutine API: suspends until `order:<id>` is held, and writes with the lease's fencing token. */
        open suspend fun pay(order: String): Long =
            locks.withLock("order:$order", 10.seconds) { lease -> ledger.write(order, lease.fencingToken()) }

        /** The same lock, taken by the proxy around a suspend function; a busy lock fails at once. */
        @WithLock(name = "'order:' + #order", ttl = "10s", acquireTimeout = "0s")
        open suspend fun cancel(order: String): String = "cancelled $order"

        /** Holds `order:<id>` until the caller is cancelled or the lease is lost: renewed every 100 ms, so a loss shows soon. */
        @WithLock(name = "'order:' + #order", ttl = "300ms")
        open suspend fun hold(order: String, cancelled: CompletableDeferred<Unit>) = holdUntilCancelled(cancelled)

        /** [hold] on a one-minute lease: gone within seconds means released, not expired. */
        @WithLock(name = "'order:' + #order", ttl = "60s")
        open suspend fun holdOnALongLease(order: String, cancelled: CompletableDeferred<Unit>) = holdUntilCancelled(cancelled)

        private suspend fun holdUntilCancelled(cancelled: CompletableDeferred<Unit>) {
            try {
                awaitCancellation()
            } finally {
                cancelled.complete(Unit)
            }
        }

        /** Every 50 ms on one instance at a time: records whether its lock is held while it runs. */
        @Scheduled(fixedRate = 50)
        @WithLock(name = "'ledger-check'", ttl = "10s", acquireTimeout = "0s", onBusy = WithLock.OnBusy.SKIP)
        open suspend fun check() {
            ledger.checks += ledger.isLocked("ledger-check")
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ImportAutoConfiguration(ReactiveLockAnnotationAutoConfiguration::class)
    class Annotations

    @Configuration(proxyBeanMethods = false)
    @EnableScheduling
    class Scheduling

    private lateinit var redis: RedisServer
    private lateinit var client: RedisClient
    private lateinit var connection: StatefulRedisConnection<String, String>
    private lateinit var locks: ReactiveRedisLock
    private lateinit var ledger: Ledger

    @BeforeEach
    fun setUp(redis: RedisServer) {
        this.redis = redis
        client = RedisClient.create(redis.uri())
        connection = client.connect()
        locks = ReactiveRedisLock.create(redis.uri())
        ledger = Ledger(connection)
    }

    @AfterEach
    fun tearDown() {
        locks.close()
        connection.close()
        client.shutdown()
    }

    private fun application(vararg configurations: Class<*>): AnnotationConfigApplicationContext =
        AnnotationConfigApplicationContext().apply {
            beanFactory.registerSingleton("locks", locks)
            registerBean(Orders::class.java, Supplier { Orders(locks, ledger) })
            register(Annotations::class.java, *configurations)
            refresh()
        }

    private fun held(name: String): Boolean = redis.call("EXISTS", "lock:{$name}") == "1"

    @Test
    fun theAnnotatedSuspendFunctionAndTheSuspendingWithLockTakeTheSameLock() {
        application().use { context ->
            val orders = context.getBean(Orders::class.java)
            runBlocking {
                val paying = async(Dispatchers.Default) { orders.pay("7") }
                await().until { held("order:7") }

                val busy = runCatching { withContext(Dispatchers.Default) { orders.cancel("7") } }.exceptionOrNull()
                assertThat(busy).isInstanceOf(LockAcquisitionException::class.java)
                assertThat((busy as LockAcquisitionException).reason()).isEqualTo(LockAcquisitionException.Reason.BUSY)

                ledger.gate.complete(Unit)
                assertThat(paying.await()).isPositive()
                assertThat(withContext(Dispatchers.Default) { orders.cancel("7") }).isEqualTo("cancelled 7")
            }
            assertThat(held("order:7")).isFalse()
        }
    }

    @Test
    fun cancellingTheCallerOfAnAnnotatedSuspendFunctionReleasesItsLockAtOnce() {
        application().use { context ->
            val orders = context.getBean(Orders::class.java)
            runBlocking {
                val cancelled = CompletableDeferred<Unit>()
                val call = launch(Dispatchers.Default) { orders.holdOnALongLease("8", cancelled) }
                await().until { held("order:8") }

                call.cancel()
                call.join()

                // The function runs in a coroutine of the proxy's Mono, cancelled with it: awaited, as it ends on its own dispatcher.
                withTimeout(10.seconds) { cancelled.await() } // fails here if the function is never cancelled
            }
            // Released, not expired: the lease is a minute, twelve times this bound.
            await().atMost(Duration.ofSeconds(5)).until { !held("order:8") }
        }
    }

    @Test
    fun aLostLeaseCancelsTheAnnotatedSuspendFunctionWhichThrowsLockLostException() {
        application().use { context ->
            val orders = context.getBean(Orders::class.java)
            runBlocking {
                val cancelled = CompletableDeferred<Unit>()
                val call = async(Dispatchers.Default) { runCatching { orders.hold("9", cancelled) }.exceptionOrNull() }
                await().until { held("order:9") }

                redis.call("DEL", "lock:{order:9}")

                assertThat(call.await()).isInstanceOf(LockLostException::class.java)
                withTimeout(10.seconds) { cancelled.await() } // fails here if the function is never cancelled
            }
        }
    }

    @Test
    fun aScheduledSuspendJobRunsUnderItsLock() {
        application(Scheduling::class.java).use {
            await().atMost(Duration.ofSeconds(30)).until { ledger.checks.size >= 3 }
        }
        assertThat(ledger.checks).`as`("EXISTS lock:{ledger-check} inside each run").containsOnly(1L)
    }
}
