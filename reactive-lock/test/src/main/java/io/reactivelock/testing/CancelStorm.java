package io.reactivelock.testing;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/** The acquisitions of the contracts' cancel storms (the core's storms have theirs in its test sources). */
final class CancelStorm {

    private CancelStorm() {}

    /**
     * The {@code i}-th acquisition of a cancel storm: {@code acquire} turns a body into the
     * acquisition, whose body lasts up to {@code bodyMillis}. Even ones are cancelled within 3 ms,
     * mostly while their attempt is in flight; odd ones within {@code laterMillis}, waiting or in
     * their body; and every eighth 1 ms into a body that never ends by itself, so that however slow
     * the grants, some cancels cut running bodies. Each body cut counts in {@code bodiesCut}.
     */
    static Mono<String> acquisition(int i, int bodyMillis, int laterMillis, AtomicInteger bodiesCut,
            Function<Mono<String>, Mono<String>> acquire) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        if (i % 8 == 7) {
            Sinks.One<Boolean> entered = Sinks.one();
            Mono<String> body = Mono.delay(Duration.ofMillis(1)).doOnNext(t -> entered.tryEmitValue(true))
                    .then(Mono.<String>never())
                    .doOnCancel(bodiesCut::incrementAndGet);
            return acquire.apply(body).takeUntilOther(entered.asMono());
        }
        Mono<String> body = Mono.delay(Duration.ofMillis(random.nextInt(bodyMillis))).thenReturn("done")
                .doOnCancel(bodiesCut::incrementAndGet);
        return acquire.apply(body).take(Duration.ofNanos(random.nextLong(TimeUnit.MILLISECONDS.toNanos(i % 2 == 0 ? 3 : laterMillis))));
    }
}
