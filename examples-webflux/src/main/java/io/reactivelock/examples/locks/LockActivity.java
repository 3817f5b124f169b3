package io.reactivelock.examples.locks;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.ValueAtPercentile;
import io.reactivelock.inspect.LockInspector;
import io.reactivelock.inspect.LockState;
import io.reactivelock.micrometer.LockMetrics;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * What the {@code /locks} page shows, sampled once a second for all viewers together: the locks
 * held (through the {@link LockInspector}) and the rates and wait percentiles of the app's
 * {@code reactive.lock.*} meters. One sampler runs while at least one page is open, whatever the
 * number of pages; a page that opens gets the latest sample at once.
 */
@Component
public class LockActivity {

    private static final Logger log = LoggerFactory.getLogger(LockActivity.class);

    /** How often the locks and meters are read. */
    static final Duration PERIOD = Duration.ofSeconds(1);
    /** The most locks a snapshot lists. */
    static final int MAX_LOCKS = 50;

    private final LockInspector inspector;
    private final MeterRegistry registry;
    private final Flux<Snapshot> snapshots;

    LockActivity(LockInspector inspector, MeterRegistry registry) {
        this.inspector = inspector;
        this.registry = registry;
        this.snapshots = Flux.defer(() -> {
                    Totals[] previous = {null};
                    return Flux.interval(Duration.ZERO, PERIOD)
                            .onBackpressureDrop()
                            .concatMap(tick -> {
                                Totals now = Totals.read(registry);
                                Totals before = previous[0];
                                previous[0] = now;
                                return sample(now, before);
                            }, 1);
                })
                .replay(1)
                .refCount();
    }

    /** The snapshots, one per {@link #PERIOD}; shared by every subscriber. */
    public Flux<Snapshot> snapshots() {
        return snapshots;
    }

    /** A snapshot of the locks now, with the meters' rates since {@code before} (none for the first one). */
    private Mono<Snapshot> sample(Totals now, @Nullable Totals before) {
        List<Timer> acquired = acquireTimers("acquired");
        return inspector.names()
                .take(MAX_LOCKS)
                .flatMapSequential(inspector::inspect)
                .filter(LockState::inUse)
                .flatMapIterable(Row::of)
                .collectSortedList(Comparator.comparing(Row::name).thenComparing(Row::kind))
                .map(rows -> new Snapshot(System.currentTimeMillis(), rows,
                        rate(now, before, Totals::acquired), rate(now, before, Totals::handedOff),
                        rate(now, before, Totals::busy), rate(now, before, Totals::lost),
                        percentile(acquired, 0.5), percentile(acquired, 0.99)))
                .onErrorResume(error -> {
                    log.debug("Could not sample the locks", error);
                    return Mono.empty();
                });
    }

    private static @Nullable Double rate(Totals now, @Nullable Totals before, ToDoubleFunction<Totals> count) {
        if (before == null) {
            return null;
        }
        double seconds = (now.nanos() - before.nanos()) / 1e9;
        return seconds <= 0 ? null : (count.applyAsDouble(now) - count.applyAsDouble(before)) / seconds;
    }

    private List<Timer> acquireTimers(String outcome) {
        return List.copyOf(registry.find(LockMetrics.ACQUIRE).tag("outcome", outcome).timers());
    }

    /** The highest {@code percentile} of the wait over the timers (one per lock name when tagged), in ms. */
    private static @Nullable Double percentile(List<Timer> timers, double percentile) {
        Double highest = null;
        for (Timer timer : timers) {
            for (ValueAtPercentile value : timer.takeSnapshot().percentileValues()) {
                if (value.percentile() == percentile) {
                    double millis = value.value(TimeUnit.MILLISECONDS);
                    highest = highest == null ? millis : Math.max(highest, millis);
                }
            }
        }
        return highest;
    }

    /** The meters' counts at one moment. */
    private record Totals(long nanos, double acquired, double handedOff, double busy, double lost) {

        static Totals read(MeterRegistry registry) {
            return new Totals(System.nanoTime(),
                    count(registry.find(LockMetrics.ACQUIRE).tag("outcome", "acquired").timers()),
                    registry.find(LockMetrics.HANDOFFS).counters().stream().mapToDouble(Counter::count).sum(),
                    count(registry.find(LockMetrics.ACQUIRE).tag("outcome", "busy").timers()),
                    registry.find(LockMetrics.LOST).counters().stream().mapToDouble(Counter::count).sum());
        }

        private static double count(Collection<Timer> timers) {
            return timers.stream().mapToLong(Timer::count).sum();
        }
    }

    /**
     * One sample for the page.
     *
     * @param at when it was taken (ms since the epoch)
     * @param locks what is held, by name then kind (of at most {@value #MAX_LOCKS} names)
     * @param acquiredPerSecond acquisitions per second since the previous sample; null in the first sample
     * @param handOffsPerSecond releases per second that handed the lock straight to a waiter
     * @param busyPerSecond acquisitions given up (still busy at the acquire timeout) per second
     * @param lostPerSecond leases lost per second
     * @param waitP50Millis median wait before acquiring, over the last seconds; null before any
     * @param waitP99Millis 99th percentile of that wait
     */
    public record Snapshot(long at, List<Row> locks, @Nullable Double acquiredPerSecond,
            @Nullable Double handOffsPerSecond, @Nullable Double busyPerSecond,
            @Nullable Double lostPerSecond, @Nullable Double waitP50Millis, @Nullable Double waitP99Millis) {}

    /**
     * One row of the table: the lock, the semaphore or the read-write lock of a name, while held
     * (see {@link LockState}).
     *
     * @param name the name
     * @param kind {@code lock}, {@code read-write} or {@code semaphore}
     * @param holder the first 8 characters of the lock holder's or the writer's token; null for a
     *     semaphore, and for a read-write lock held by readers
     * @param ttlMillis what is left of that holder's lease
     * @param fencingToken the last fencing token of the lock, or of the read-write lock's writers
     * @param waiting the lock's waiters, or the writers waiting for the read-write lock; null for a
     *     semaphore, whose waiters Redis does not know
     * @param readers the read-write lock's readers
     * @param permits the semaphore's permits held
     * @param permitHolders how many hold them
     */
    public record Row(String name, String kind, @Nullable String holder, @Nullable Long ttlMillis,
            @Nullable Long fencingToken, @Nullable Long waiting, @Nullable Long readers, @Nullable Long permits,
            @Nullable Integer permitHolders) {

        /** A row for each of what is held of the name. */
        static List<Row> of(LockState state) {
            List<Row> rows = new ArrayList<>(3);
            if (state.held()) {
                rows.add(new Row(state.name(), "lock", state.holder(), millis(state.ttl()), state.fencingToken(),
                        state.waiting(), null, null, null));
            }
            LockState.ReadWrite readWrite = state.readWrite();
            if (readWrite != null && readWrite.held()) {
                rows.add(new Row(state.name(), "read-write", readWrite.writer(), millis(readWrite.writerTtl()),
                        readWrite.fencingToken(), readWrite.writersWaiting(), readWrite.readers(), null, null));
            }
            LockState.Semaphore semaphore = state.semaphore();
            if (semaphore != null) {
                rows.add(new Row(state.name(), "semaphore", null, null, null, null, null, semaphore.permits(),
                        semaphore.holders().size()));
            }
            return rows;
        }

        private static @Nullable Long millis(@Nullable Duration duration) {
            return duration == null ? null : duration.toMillis();
        }
    }
}
