package io.reactivelock.faults;

import static io.reactivelock.faults.Faults.exists;
import static io.reactivelock.faults.Faults.report;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.CriticalSectionHistory;
import io.reactivelock.support.FencedResource;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Fault 3: a client paused longer than its TTL (a GC pause, a frozen VM), as in Martin Kleppmann's
 * critique of Redlock. The paused client's scheduler thread is blocked, so neither its renewals
 * nor its body can run; its lock expires and another client takes it and writes. When the paused
 * client wakes it still writes with its old fencing token: a fenced resource rejects that write,
 * an unfenced one (the negative control) lets it overwrite the new holder's. Either way the stale
 * holder is then told with {@link LockLostException}, and its release leaves the new lock alone.
 */
@WithRedis
class ClientPauseFencingTest {

    /** Long enough that the test sees the frozen client's key before it expires, however slow the machine. */
    private static final Duration TTL = Duration.ofSeconds(2);

    @Test
    void aStaleHoldersWriteIsRejectedByFencingAndItIsToldItLostTheLock(RedisServer redis) throws Exception {
        Outcome outcome = pauseTheHolderPastItsTtl(redis, FencedResource.fenced());

        assertThat(outcome.resource.accepted()).containsExactly("new holder");
        assertThat(outcome.resource.rejected()).containsExactly("stale holder");
        assertThat(outcome.history.maxOccupancy()).as("exclusion itself broke: both believed they held it").isEqualTo(2);
        report("fault 3", "stale write rejected by fencing (stale fence < new fence); stale holder told: "
                + outcome.staleError.getClass().getSimpleName() + "; lease remaining when it wrote: "
                + outcome.remainingWhenStaleWrote);
    }

    @Test
    void withoutFencingTheStaleHoldersWriteOverwritesTheNewHoldersWhichTheCheckerCatches(RedisServer redis)
            throws Exception {
        Outcome outcome = pauseTheHolderPastItsTtl(redis, FencedResource.unfenced());

        assertThat(outcome.resource.value()).as("negative control: the stale write won").isEqualTo("stale holder");
        assertThat(outcome.history.maxOccupancy()).isEqualTo(2);
    }

    private record Outcome(FencedResource resource, CriticalSectionHistory history, Throwable staleError,
            Duration remainingWhenStaleWrote) {}

    private static Outcome pauseTheHolderPastItsTtl(RedisServer redis, FencedResource resource) throws Exception {
        ExecutorService pausable = Executors.newSingleThreadScheduledExecutor(task -> {
            Thread thread = new Thread(task, "pausable-client");
            thread.setDaemon(true);
            return thread;
        });
        Scheduler clientThread = Schedulers.fromExecutorService(pausable);
        CountDownLatch wake = new CountDownLatch(1);
        CriticalSectionHistory history = new CriticalSectionHistory();
        AtomicReference<Duration> remainingWhenWrote = new AtomicReference<>();
        ReactiveRedisLock paused = ReactiveRedisLock.create(redis.uri(), LockOptions.builder().scheduler(clientThread).build());
        ReactiveRedisLock other = ReactiveRedisLock.create(redis.uri());
        try {
            // The client freezes (its one thread blocks until woken) just as it gets the lock: its body's
            // write and its renewals wait behind the pause.
            pausable.execute(() -> {
                try {
                    wake.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            CompletableFuture<Object> stale = paused.withLock("resource", TTL, lease -> history.record("paused",
                    "resource", lease.token(), lease.fencingToken(), Mono.fromRunnable(() -> {
                        remainingWhenWrote.set(lease.remaining());
                        resource.write(lease.fencingToken(), "stale holder");
                    }).subscribeOn(clientThread).then(Mono.never()))).toFuture();
            await().pollInterval(Duration.ofMillis(2)).until(() -> exists(redis, "lock:{resource}"));

            // Another client gets the lock once it expires, writes, and stays inside until the stale one is done.
            CompletableFuture<Void> staleDone = stale.handle((v, e) -> null);
            CompletableFuture<String> newHolderSawItsLock = other.withLock("resource", Duration.ofSeconds(30),
                    lease -> history.record("other", "resource", lease.token(), lease.fencingToken(),
                            Mono.fromRunnable(() -> resource.write(lease.fencingToken(), "new holder"))
                                    .then(Mono.fromRunnable(wake::countDown))
                                    .then(Mono.fromFuture(staleDone))
                                    // The stale holder's release was sent before its error came; a one-try
                                    // acquisition through its lock goes after it on its connection: once
                                    // refused, that release has run, and its effect can be read.
                                    .then(paused.withAcquireTimeout(Duration.ZERO).withLock("resource", TTL, Mono.just("taken"))
                                            .onErrorResume(LockAcquisitionException.class, busy -> Mono.empty()))
                                    .then(Mono.fromCallable(() -> redis.call("GET", "lock:{resource}"))
                                            .subscribeOn(Schedulers.boundedElastic()))
                                    // The new holder's token, with the sleepers mark if that refused acquisition set it.
                                    .map(value -> String.valueOf(value.equals(lease.token()) || value.equals(lease.token() + "+")))))
                    .toFuture();

            Throwable staleError = RedisRestartTest.failure(stale);
            assertThat(staleError).isInstanceOf(LockLostException.class);
            assertThat(newHolderSawItsLock.get()).as("the stale release left the new holder's lock").isEqualTo("true");
            assertThat(remainingWhenWrote.get()).as("lease.remaining() showed the lease was over").isZero();
            return new Outcome(resource, history, staleError, remainingWhenWrote.get());
        } finally {
            wake.countDown();
            paused.close();
            other.close();
            clientThread.dispose();
        }
    }
}
