package io.reactivelock.spi;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.Primitive;
import io.reactivelock.support.RecordingListener;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * The core's own decisions, against a store that records what it is asked (Redis itself is
 * exercised by every other test; this pins what the core sends, in what order).
 */
class LockCoreTest {

    /**
     * Found by the nemesis soak: a grant that came back after its validity (a frozen Redis) was
     * released in the background while the acquisition retried with the same token; that release
     * could land after the retry's grant and delete the lock under the body. The retry takes its
     * own grant back, so nothing may be released before the body's own release.
     */
    @Test
    void aGrantThatCameBackWithoutValidityIsTakenBackByTheNextAttemptAndNotReleasedUnderTheBody() {
        List<String> asked = new CopyOnWriteArrayList<>();
        AtomicInteger attempts = new AtomicInteger();
        LockStore<String> store = new RecordingStore(asked) {
            @Override
            public CompletionStage<Reply> acquire(String call) {
                asked.add("acquire");
                // The first grant has no validity left when it arrives; the retry's has 30 s.
                return CompletableFuture.completedFuture(attempts.incrementAndGet() == 1
                        ? Reply.granted(1, 0)
                        : Reply.granted(2, Duration.ofSeconds(30).toNanos()));
            }
        };
        LockCore<String> core = new LockCore<>(LockOptions.defaults(), Primitive.LOCK, store);
        StepVerifier.create(core.withLock("a", Duration.ofSeconds(30),
                        (Function<LockLease, Mono<Long>>) lease -> Mono.fromCallable(() -> {
                            asked.add("body");
                            return lease.fencingToken();
                        })))
                .expectNext(2L)
                .verifyComplete();
        assertThat(asked).containsExactly("acquire", "acquire", "body", "release");
    }

    /**
     * Found by the nemesis soak: a body frozen past its lease (a stop-the-world pause) could
     * complete before the watchdog noticed, and its value went out as if made under the lock. The
     * caller gets {@link LockLostException} instead, after the release, and the listener hears the
     * loss before the release. The body stands for the pause by ending its own lease (the watchdog's
     * first renewal is 10 s away).
     */
    @Test
    void aBodyThatCompletesAfterItsLeaseRanOutFailsWithLockLostAfterTheRelease() {
        List<String> asked = new CopyOnWriteArrayList<>();
        RecordingListener heard = new RecordingListener();
        LockCore<String> core = new LockCore<>(LockOptions.builder().listener(heard).build(), Primitive.LOCK,
                new RecordingStore(asked));
        StepVerifier.create(core.withLock("a", Duration.ofSeconds(30), (Function<LockLease, Mono<String>>) lease ->
                        Mono.fromCallable(() -> {
                            ((Lease) lease).extendTo(System.nanoTime() - 1); // frozen until after the lease ended
                            return "late";
                        })))
                .expectErrorSatisfies(error -> assertThat(error).isInstanceOf(LockLostException.class)
                        .hasMessageContaining("ran out before the body completed"))
                .verify(Duration.ofSeconds(10));
        assertThat(asked).containsExactly("acquire", "release");
        assertThat(heard.list).containsExactly("acquired a", "lost a", "released a");
    }

    @Test
    void aBodyThatCompletesWithinItsLeaseGivesItsValue() {
        List<String> asked = new CopyOnWriteArrayList<>();
        LockCore<String> core = new LockCore<>(LockOptions.defaults(), Primitive.LOCK, new RecordingStore(asked));
        StepVerifier.create(core.withLock("a", Duration.ofSeconds(30),
                        (Function<LockLease, Mono<String>>) lease -> Mono.just("in time")))
                .expectNext("in time")
                .verifyComplete();
        assertThat(asked).containsExactly("acquire", "release");
    }

    /** A store that grants at once and records the releases it is asked for. */
    private static class RecordingStore implements LockStore<String> {
        private final List<String> asked;

        RecordingStore(List<String> asked) {
            this.asked = asked;
        }

        @Override
        public String open(LockCore<String>.Acquisition acquisition) {
            return acquisition.token();
        }

        @Override
        public CompletionStage<Reply> acquire(String call) {
            asked.add("acquire");
            return CompletableFuture.completedFuture(Reply.granted(1, Duration.ofSeconds(30).toNanos()));
        }

        @Override
        public Mono<Void> renew(String call, Lease lease) {
            return Mono.empty();
        }

        @Override
        public Mono<Void> release(String call) {
            return Mono.fromRunnable(() -> asked.add("release"));
        }

        @Override
        public CompletionStage<?> releaseAbandoned(String call) {
            asked.add("release-abandoned");
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public boolean isTransient(Throwable error) {
            return false;
        }

        @Override
        public Duration pause(String call, long retry) {
            return Duration.ofMillis(1);
        }
    }
}
