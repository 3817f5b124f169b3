package io.reactivelock.kotlin.docs

import io.reactivelock.testing.InMemoryReactiveLock
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.assertj.core.api.Assertions.assertThat
import org.junit.jupiter.api.Test

/**
 * Runs the Kotlin blocks of docs/kotlin.md (as [DocSnippets] holds them, line for line) on the
 * in-memory lock, each with a timeout: they return what the page says and leave nothing locked.
 */
class DocSnippetsRunTest {

    private val locks = InMemoryReactiveLock.create()
    private val snippets = DocSnippets(locks)

    @Test
    fun `pay runs its block under the lock and returns its receipt`() = runBlocking {
        val receipt = withTimeout(10.seconds) { snippets.pay("42") }
        assertThat(receipt.id).isEqualTo("42")
        assertThat(locks.lockedNames()).`as`("locked after pay").isEmpty()
    }

    @Test
    fun `pages emits the feed's pages under the lock and releases it`() = runBlocking {
        val pages = withTimeout(10.seconds) { snippets.pages("news").toList() }
        assertThat(pages.map { it.number }).containsExactly(1)
        assertThat(locks.lockedNames()).`as`("locked after pages").isEmpty()
    }
}
