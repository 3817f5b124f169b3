package io.reactivelock.support;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Handler;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The JDK's logging builds its global handlers on the first record logged, under a lock. Lettuce
 * logs its first "Reconnecting" there from two reconnect threads at once when both connections of
 * a lock drop together; BlockHound used to fail the one that waited, and Lettuce, which catches
 * exceptions but not errors there, then never reconnected that connection.
 */
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
}
