package io.reactivelock.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/** blockhound-junit-platform installs BlockHound in this module's test JVM too; this fails if it stops. */
class BlockHoundActiveTest {

    @Test
    @DisplayName("a sleep on a Reactor parallel thread is reported as blocking")
    void sleepingOnAParallelThreadIsReported() {
        Mono<String> sleepsOnParallelThread = Mono.fromCallable(() -> {
            try {
                Thread.sleep(1);
                return "allowed";
            } catch (BlockingOperationError e) {
                return "reported";
            }
        }).subscribeOn(Schedulers.parallel());

        assertThat(sleepsOnParallelThread.block(Duration.ofSeconds(10))).isEqualTo("reported");
    }
}
