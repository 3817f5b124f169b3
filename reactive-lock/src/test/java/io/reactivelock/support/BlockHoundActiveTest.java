package io.reactivelock.support;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import reactor.blockhound.BlockingOperationError;
import reactor.core.Exceptions;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * blockhound-junit-platform installs BlockHound in every test JVM, and the JVMs the tests fork
 * install it themselves ({@link #requireActive()}); this fails if it ever stops doing so.
 */
public class BlockHoundActiveTest {

    @Test
    void sleepingOnAParallelSchedulerThreadIsReported() {
        Mono<Long> sleepsOnParallelThread = Mono.delay(Duration.ofMillis(1)).doOnNext(tick -> {
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });

        assertThatThrownBy(() -> sleepsOnParallelThread.block(Duration.ofSeconds(5)))
                .satisfies(e -> assertThat(Exceptions.unwrap(e)).isInstanceOf(BlockingOperationError.class));
    }

    /**
     * Throws unless BlockHound reports a sleep on a Reactor parallel thread. For the {@code main} of
     * a JVM a test forks, after {@code BlockHound.install()}, so that it fails rather than run unpoliced.
     */
    public static void requireActive() {
        Boolean reported = Mono.fromCallable(() -> {
            try {
                Thread.sleep(1);
                return false;
            } catch (BlockingOperationError e) {
                return true;
            }
        }).subscribeOn(Schedulers.parallel()).block(Duration.ofSeconds(10));
        if (!Boolean.TRUE.equals(reported)) {
            throw new IllegalStateException("BlockHound is not active in this JVM: a sleep on a parallel thread passed");
        }
    }
}
