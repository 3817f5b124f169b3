package io.reactivelock.kotlin

import io.reactivelock.testing.InMemoryReactiveLock
import java.time.Duration
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import org.assertj.core.api.Assertions.assertThat
import org.junit.jupiter.api.Test
import reactor.blockhound.BlockingOperationError
import reactor.core.Exceptions
import reactor.core.publisher.Mono

/**
 * blockhound-junit-platform installs BlockHound in this module's test JVM too, with the library's
 * allowances (its test jar) and kotlinx-coroutines-debug's integration; this fails if either stops.
 */
class BlockHoundActiveTest {

    @Test
    fun sleepingOnAReactorParallelThreadIsReported() {
        val sleeps = Mono.delay(Duration.ofMillis(1)).doOnNext { Thread.sleep(10) }

        val thrown = runCatching { sleeps.block(Duration.ofSeconds(5)) }.exceptionOrNull()

        assertThat(thrown?.let(Exceptions::unwrap)).isInstanceOf(BlockingOperationError::class.java)
    }

    @Test
    fun aBlockThatSleepsOnDispatchersDefaultIsReportedAndTheLockReleased(): Unit = runBlocking {
        val locks = InMemoryReactiveLock.create()

        val thrown = runCatching {
            withContext(Dispatchers.Default) { locks.withLock("report", 30.seconds) { Thread.sleep(10) } }
        }.exceptionOrNull()

        assertThat(thrown).isInstanceOf(BlockingOperationError::class.java)
        assertThat(locks.isLocked("report")).isFalse()
    }
}
