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
            public CompletionStage<Reply> acquire(String call, int attempt) {
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

    /**
     * The engine asks, the store answers: each attempt carries its number, and the pause before
     * the first is asked with 0 attempts sent (zero: at once), the later ones with the count so far.
     */
    @Test
    void theStoreIsAskedForNumberedAttemptsAndForEachPauseWithTheAttemptsSentSoFar() {
        List<String> asked = new CopyOnWriteArrayList<>();
        LockStore<String> store = new RecordingStore(asked) {
            @Override
            public CompletionStage<Reply> acquire(String call, int attempt) {
                asked.add("acquire " + attempt);
                return CompletableFuture.completedFuture(attempt < 3 ? Reply.busy()
                        : Reply.granted(1, Duration.ofSeconds(30).toNanos()));
            }

            @Override
            public Duration pause(String call, int attempts) {
                asked.add("pause " + attempts);
                return attempts == 0 ? Duration.ZERO : Duration.ofMillis(1);
            }
        };
        LockCore<String> core = new LockCore<>(LockOptions.defaults(), Primitive.LOCK, store);
        StepVerifier.create(core.withLock("a", Duration.ofSeconds(30), (Function<LockLease, Mono<Integer>>) lease -> Mono.just(1)))
                .expectNext(1)
                .verifyComplete();
        assertThat(asked).containsExactly("pause 0", "acquire 1", "pause 1", "acquire 2", "pause 2", "acquire 3", "release");
    }

    /**
     * An attempt that fails after its subscriber left may still have taken something (a
     * multi-lock's first groups, whose own release failed): the core releases again after it.
     */
    @Test
    void anAttemptThatFailsAfterTheSubscriberLeftIsReleasedAgain() {
        List<String> asked = new CopyOnWriteArrayList<>();
        CompletableFuture<LockStore.Reply> inFlight = new CompletableFuture<>();
        LockStore<String> store = new RecordingStore(asked) {
            @Override
            public CompletionStage<Reply> acquire(String call, int attempt) {
                asked.add("acquire");
                return inFlight;
            }
        };
        LockCore<String> core = new LockCore<>(LockOptions.defaults(), Primitive.LOCK, store);
        core.withLock("a", Duration.ofSeconds(30), (Function<LockLease, Mono<Integer>>) lease -> Mono.just(1))
                .subscribe().dispose();
        assertThat(asked).containsExactly("acquire", "release-abandoned");
        inFlight.completeExceptionally(new IllegalStateException("the store failed after the cancel"));
        assertThat(asked).containsExactly("acquire", "release-abandoned", "release-abandoned");
    }

    /** A release that says it handed the lock straight to a waiter is heard as a hand-off. */
    @Test
    void aReleaseThatHandedTheLockOnIsHeardAsAHandOff() {
        RecordingListener heard = new RecordingListener();
        LockStore<String> store = new RecordingStore(new CopyOnWriteArrayList<>()) {
            @Override
            public Mono<Boolean> release(String call) {
                return Mono.just(true);
            }
        };
        LockCore<String> core = new LockCore<>(LockOptions.builder().listener(heard).build(), Primitive.LOCK, store);
        StepVerifier.create(core.withLock("a", Duration.ofSeconds(30), (Function<LockLease, Mono<Integer>>) lease -> Mono.just(1)))
                .expectNext(1)
                .verifyComplete();
        assertThat(heard.list).containsExactly("acquired a", "released a", "handedOff a");
    }

    /** A store that grants at once and records the releases it is asked for. */
    private static class RecordingStore implements LockStore<String> {
        private final List<String> asked;

        RecordingStore(List<String> asked) {
            this.asked = asked;
        }

        @Override
        public String open(Request request) {
            return request.token();
        }

        @Override
        public CompletionStage<Reply> acquire(String call, int attempt) {
            asked.add("acquire");
            return CompletableFuture.completedFuture(Reply.granted(1, Duration.ofSeconds(30).toNanos()));
        }

        @Override
        public Mono<Void> renew(String call, Lease lease) {
            return Mono.empty();
        }

        @Override
        public Mono<Boolean> release(String call) {
            return Mono.fromCallable(() -> {
                asked.add("release");
                return false;
            });
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
        public Duration pause(String call, int attempts) {
            return attempts == 0 ? Duration.ZERO : Duration.ofMillis(1);
        }
    }
}
