package io.reactivelock.support;

import io.lettuce.core.api.reactive.RedisStringReactiveCommands;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The mutual-exclusion workload: {@link #BODIES} concurrent bodies each do a non-atomic
 * read-modify-write of the Redis key {@code counter}, hopping threads between read and write, so
 * that an overlap really interleaves instead of being serialised by one Lettuce event loop. It
 * counts how many bodies were inside at once.
 */
public final class CounterWorkload {

    /** How many bodies {@link #run} starts at once. */
    public static final int BODIES = 32;

    private final RedisStringReactiveCommands<String, String> redis;
    private final AtomicInteger occupancy = new AtomicInteger();
    private final AtomicInteger maxOccupancy = new AtomicInteger();

    /** A workload on the counter of the Redis {@code redis} talks to. */
    public CounterWorkload(RedisStringReactiveCommands<String, String> redis) {
        this.redis = redis;
    }

    /** Runs {@link #BODIES} bodies at once, each wrapped by {@code guard} (the lock under test, or nothing). */
    public Mono<Void> run(Function<Mono<String>, Mono<String>> guard) {
        return Flux.range(0, BODIES).flatMap(i -> guard.apply(body()), BODIES).then();
    }

    /** One body: read the counter, hop threads, write it plus one, hop threads. */
    public Mono<String> body() {
        return Mono.defer(() -> {
            maxOccupancy.accumulateAndGet(occupancy.incrementAndGet(), Math::max);
            return redis.get("counter").defaultIfEmpty("0")
                    .publishOn(Schedulers.parallel())
                    .delayElement(Duration.ofMillis(2))
                    .flatMap(value -> redis.set("counter", String.valueOf(Integer.parseInt(value) + 1)))
                    .publishOn(Schedulers.parallel())
                    // doOnTerminate runs before completion travels on to the release; doFinally would run after it.
                    .doOnTerminate(occupancy::decrementAndGet);
        });
    }

    /** The counter now (blocking: call it from the test thread). */
    public int counter() {
        return Integer.parseInt(redis.get("counter").defaultIfEmpty("0").block(Duration.ofSeconds(10)));
    }

    /** The most bodies that were inside at once. */
    public int maxOccupancy() {
        return maxOccupancy.get();
    }

    /** Whether {@code bodies} bodies lost an update or overlapped: what a negative control must see. */
    public boolean sawRace(int bodies) {
        return counter() != bodies || maxOccupancy() > 1;
    }
}
