package io.reactivelock.support;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import java.util.logging.Handler;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import io.reactivelock.LockListener;
import io.reactivelock.LockOptions;
import io.reactivelock.testing.InMemoryReactiveLock;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Isolated;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * What the allowances let through, and what they do not.
 *
 * <p>The JDK's logging builds its global handlers on the first record logged, under a lock. Lettuce
 * logs its first "Reconnecting" there from two reconnect threads at once when both connections of
 * a lock drop together; BlockHound used to fail the one that waited, and Lettuce, which catches
 * exceptions but not errors there, then never reconnected that connection.
 */
@Isolated("it reconfigures the JDK's logging for the whole JVM")
class ShortLocksBlockHoundIntegrationTest {

    /** A global handler whose creation holds the JDK logging's lock until the test lets it finish. */
    public static final class SlowToCreateHandler extends Handler {
        static final CountDownLatch creating = new CountDownLatch(1);
        static final CountDownLatch finish = new CountDownLatch(1);

        public SlowToCreateHandler() {
            creating.countDown();
            try {
                finish.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public void publish(LogRecord record) {}

        @Override
        public void flush() {}

        @Override
        public void close() {}
    }

    @Test
    void aNonBlockingThreadWaitingForTheJdkLoggingToCreateItsHandlersIsNotReportedAsBlocking() throws Exception {
        LogManager logManager = LogManager.getLogManager();
        Logger logger = Logger.getLogger(ShortLocksBlockHoundIntegrationTest.class.getName());
        try {
            // The global handlers are created again, lazily, by the next record logged.
            logManager.readConfiguration(new ByteArrayInputStream(("handlers=" + SlowToCreateHandler.class.getName())
                    .getBytes(StandardCharsets.UTF_8)));
            Thread first = new Thread(() -> logger.info("first record: creates the handlers"));
            first.start();
            assertThat(SlowToCreateHandler.creating.await(10, TimeUnit.SECONDS)).isTrue();

            AtomicReference<Thread> nonBlocking = new AtomicReference<>();
            CompletableFuture<Void> second = Mono.<Void>fromRunnable(() -> {
                nonBlocking.set(Thread.currentThread());
                logger.info("second record: waits for the handlers");
            }).subscribeOn(Schedulers.parallel()).toFuture();
            await().pollInterval(Duration.ofMillis(1)).atMost(Duration.ofSeconds(10)).until(() -> second.isDone()
                    || nonBlocking.get() != null && nonBlocking.get().getState() == Thread.State.WAITING);
            SlowToCreateHandler.finish.countDown();

            assertThat(second).succeedsWithin(Duration.ofSeconds(10));
            first.join(10_000);
        } finally {
            SlowToCreateHandler.finish.countDown();
            logManager.readConfiguration(); // back to the JDK's default configuration
        }
    }

    /**
     * Lettuce caches how each sync API proxy translates its methods, under one lock for the whole
     * JVM, and builds such a proxy for every connection it opens: also for the Sentinel connection
     * it opens on an event executor thread to look the master up when a connection reconnects. After
     * a failover the Sentinels close every client connection of the old master, so several of them
     * reconnect and meet there (the nemesis soak saw BlockHound report it).
     */
    @Test
    void aNonBlockingThreadWaitingForLettucesMethodTranslatorCacheIsNotReportedAsBlocking() throws Exception {
        Class<?> translator = Class.forName("io.lettuce.core.internal.AbstractInvocationHandler$MethodTranslator");
        Field lockField = translator.getDeclaredField("lock");
        lockField.setAccessible(true);
        Lock cacheLock = (Lock) lockField.get(null);
        Method of = translator.getMethod("of", Class.class, Class[].class);

        AtomicReference<Thread> nonBlocking = new AtomicReference<>();
        CompletableFuture<Object> translated;
        // Held here as by another connection being built.
        cacheLock.lock();
        try {
            translated = Mono.fromCallable(() -> {
                nonBlocking.set(Thread.currentThread());
                return of.invoke(null, Runnable.class, new Class<?>[] {Runnable.class});
            }).subscribeOn(Schedulers.parallel()).toFuture();
            await().pollInterval(Duration.ofMillis(1)).atMost(Duration.ofSeconds(10)).until(() -> translated.isDone()
                    || nonBlocking.get() != null && nonBlocking.get().getState() == Thread.State.WAITING);
        } finally {
            cacheLock.unlock();
        }

        assertThat(translated).succeedsWithin(Duration.ofSeconds(10));
    }

    /**
     * Lettuce can complete commands inside {@code SharedLock.doExclusive} (its reconnect and flush
     * work: a disconnected buffer that overflows, a write that fails), so their callbacks, ours
     * among them, run where the allowance for its lock applies. Run there, on a non-blocking thread:
     * a blocking call in Lettuce's own frames is allowed, one reached through the library is still
     * reported. The library's call here is one that calls back on the calling thread: a
     * {@code withLock} given an invalid name tells the listener, which sleeps, before it throws.
     */
    @Test
    void underLettucesExclusiveLockABlockingCallReachedThroughTheLibraryIsStillReported() throws Exception {
        Class<?> sharedLockType = Class.forName("io.lettuce.core.protocol.SharedLock");
        Constructor<?> constructor = sharedLockType.getDeclaredConstructor();
        constructor.setAccessible(true);
        Object sharedLock = constructor.newInstance();
        Method doExclusive = sharedLockType.getDeclaredMethod("doExclusive", Runnable.class);
        doExclusive.setAccessible(true);

        List<String> outcomes = new ArrayList<>();
        LockListener sleepsOnFailure = new LockListener() {
            @Override
            public void acquireFailed(String name, Throwable error, Duration waited) {
                outcomes.add("through the library: " + sleepOutcome());
            }
        };
        InMemoryReactiveLock locks = InMemoryReactiveLock.create(LockOptions.builder().listener(sleepsOnFailure).build());

        Mono<List<String>> onNonBlockingThread = Mono.fromCallable(() -> {
            outcomes.add("outside: " + sleepOutcome());
            doExclusive.invoke(sharedLock, (Runnable) () -> outcomes.add("in Lettuce's frames: " + sleepOutcome()));
            doExclusive.invoke(sharedLock, (Runnable) () -> assertThatThrownBy(
                    () -> locks.withLock("", Duration.ofSeconds(30), Mono.just(1))).isInstanceOf(IllegalArgumentException.class));
            return outcomes;
        }).subscribeOn(Schedulers.parallel());

        assertThat(onNonBlockingThread.block(Duration.ofSeconds(10))).containsExactly(
                "outside: reported",
                "in Lettuce's frames: allowed",
                "through the library: reported");
    }

    private static String sleepOutcome() {
        try {
            Thread.sleep(1);
            return "allowed";
        } catch (BlockingOperationError e) {
            return "reported";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
    }
}
