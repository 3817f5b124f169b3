package io.reactivelock.support;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import reactor.blockhound.BlockingOperationError;
import reactor.core.Exceptions;
import reactor.core.publisher.Mono;

/** blockhound-junit-platform installs BlockHound in every test JVM; this fails if it ever stops doing so. */
class BlockHoundActiveTest {

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
}
