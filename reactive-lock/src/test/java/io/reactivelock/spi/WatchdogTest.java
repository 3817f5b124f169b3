package io.reactivelock.spi;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/** The renewal's own timing, on threads the test orders. */
class WatchdogTest {

    private static final Duration WAIT = Duration.ofSeconds(10);

    /**
     * A renewal that found the lease lost is answered as the watch is cancelled (the body ended, or
     * the client closed): the answer is not the caller's any more, and must not reach Reactor's
     * dropped-error hook, which logs it at ERROR as an operator's failure. The two threads are put in
     * the order that a real race only sometimes takes: the cancel has begun (it is disposing the timer
     * of the lease's end) when the answer arrives and goes on downstream. With the lease's end timed
     * by {@code timeout()}, which drops an error that arrives after its cancel, the hook got the
     * answer every run; {@code CloseRacesTest} found it under load, 1 run in about 17 (issue 36).
     */
    @Test
    void aLostRenewalAnsweredWhileTheWatchIsCancelledIsNotHandedToReactorsDroppedErrorHook() throws Exception {
        List<Throwable> dropped = new CopyOnWriteArrayList<>();
        Hooks.onErrorDropped(dropped::add);
        Scheduler answers = Schedulers.newSingle("renewal-answer");
        try {
            CountDownLatch inFlight = new CountDownLatch(1);
            CountDownLatch cancelling = new CountDownLatch(1);
            // The renewal's answer, on a thread of its own: sent already, it comes once the cancel has begun.
            Mono<Void> renewal = Mono.<Void>defer(() -> {
                inFlight.countDown();
                // Uninterruptibly: the cancel's first step (of the renewal) interrupts this thread.
                awaitUninterruptibly(cancelling);
                return Mono.error(new LockLostException("a", "another holder took it", null));
            }).subscribeOn(answers);
            Mono<Void> watched = Watchdog.renewWhileValid("a", new Lease("a", "token", 0, System.nanoTime() + WAIT.toNanos()),
                    Duration.ofSeconds(1), LockOptions.defaults(), timerDisposedWith(() -> {
                        // The cancel has begun: it disposes the timer of the lease's end, and goes on
                        // only once the answer's thread is done with it.
                        cancelling.countDown();
                        CountDownLatch answered = new CountDownLatch(1);
                        answers.schedule(answered::countDown);
                        await(answered);
                    }),
                    renewal, error -> false, () -> new LockLostException("a", "ran out", null));
            AtomicReference<Subscription> subscription = new AtomicReference<>();
            watched.subscribe(new CoreSubscriber<Void>() {
                @Override
                public void onSubscribe(Subscription s) {
                    subscription.set(s);
                    s.request(1);
                }

                @Override
                public void onNext(Void value) {}

                @Override
                public void onError(Throwable error) {} // after the cancel: as the watchdog's own race does

                @Override
                public void onComplete() {}
            });

            await(inFlight);
            subscription.get().cancel();

            assertThat(cancelling.getCount()).as("the cancel disposed the timer of the lease's end").isZero();
            assertThat(dropped).as("errors handed to Reactor's dropped-error hook").isEmpty();
        } finally {
            answers.dispose();
            Hooks.resetOnErrorDropped();
        }
    }

    /** A timer that never fires (the lease's end is far away) and runs {@code onDispose} when it is disposed. */
    private static Scheduler timerDisposedWith(Runnable onDispose) {
        return new Scheduler() {
            @Override
            public Disposable schedule(Runnable task) {
                throw new RejectedExecutionException("only delayed tasks");
            }

            @Override
            public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
                return onDispose::run;
            }

            @Override
            public Worker createWorker() {
                throw new RejectedExecutionException("only delayed tasks");
            }
        };
    }

    private static void awaitUninterruptibly(CountDownLatch latch) {
        boolean interrupted = false;
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (latch.getCount() > 0 && System.nanoTime() < deadline) {
            try {
                latch.await(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await(WAIT.toSeconds(), TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
