@file:OptIn(kotlinx.coroutines.ExperimentalCoroutinesApi::class) // the virtual clock of kotlinx-coroutines-test

package io.reactivelock.kotlin

import java.util.concurrent.TimeUnit
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Job
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.test.TestScope
import reactor.core.Disposable
import reactor.core.scheduler.Scheduler

/**
 * A Reactor [Scheduler] on the virtual time of a `runTest`: each task is a coroutine of the test's
 * [TestScope.backgroundScope] that waits its delay with [delay], so the test scheduler runs the lock's
 * timers (acquire timeout, renewal, a crashed holder's TTL) in order with the test's own `delay`s,
 * and [now] reads the same clock. kotlinx-coroutines-reactor only bridges the other way
 * (`Scheduler.asCoroutineDispatcher()`), and a Reactor `VirtualTimeScheduler` would be a second clock
 * to advance by hand. Everything runs on the test thread, one task at a time, as a worker requires.
 */
class TestScopeScheduler(private val test: TestScope) : Scheduler {

    override fun now(unit: TimeUnit): Long = unit.convert(test.testScheduler.currentTime, TimeUnit.MILLISECONDS)

    override fun schedule(task: Runnable): Disposable = start(test.backgroundScope, task, 0, null)

    override fun schedule(task: Runnable, delay: Long, unit: TimeUnit): Disposable =
        start(test.backgroundScope, task, unit.toMillis(delay), null)

    override fun schedulePeriodically(task: Runnable, initialDelay: Long, period: Long, unit: TimeUnit): Disposable =
        start(test.backgroundScope, task, unit.toMillis(initialDelay), unit.toMillis(period))

    /** A worker whose disposal cancels the tasks it scheduled. */
    override fun createWorker(): Scheduler.Worker = object : Scheduler.Worker {
        private val tasks = SupervisorJob(test.backgroundScope.coroutineContext[Job])
        private val scope = CoroutineScope(test.backgroundScope.coroutineContext + tasks)

        override fun schedule(task: Runnable): Disposable = start(scope, task, 0, null)

        override fun schedule(task: Runnable, delay: Long, unit: TimeUnit): Disposable =
            start(scope, task, unit.toMillis(delay), null)

        override fun schedulePeriodically(task: Runnable, initialDelay: Long, period: Long, unit: TimeUnit): Disposable =
            start(scope, task, unit.toMillis(initialDelay), unit.toMillis(period))

        override fun dispose() = tasks.cancel()

        override fun isDisposed(): Boolean = tasks.isCancelled
    }

    private fun start(scope: CoroutineScope, task: Runnable, delayMillis: Long, periodMillis: Long?): Disposable {
        val job = scope.launch {
            delay(delayMillis)
            task.run()
            while (periodMillis != null) {
                delay(periodMillis)
                task.run()
            }
        }
        return object : Disposable {
            override fun dispose() = job.cancel()
            override fun isDisposed(): Boolean = job.isCancelled
        }
    }
}
