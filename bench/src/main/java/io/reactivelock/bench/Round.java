package io.reactivelock.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The workers of one cell in this JVM and what this JVM sees of them: {@link #start} them,
 * {@link #begin} and {@link #end} the measurement, {@link #stop} them (waiting until every pair
 * in flight has finished), then {@link #addTo} a result. Redis-side figures are the caller's.
 */
final class Round {

    private final Contender contender;
    private final int workers;
    private final int instances;
    private final int firstWorker;
    private final boolean contended;
    /** How long a contended body holds the lock; 0: it only hops threads. */
    private final long holdMillis;
    /** Each worker's mean pause before it asks (exponential); 0: it asks again at once. */
    private final long thinkMeanNanos;
    /** What each worker draws its acquisitions from. */
    private final List<List<Workload.Acquisition>> choices = new ArrayList<>();
    private final ExecutorService hopExecutor;
    private final Scheduler hop;
    private final Intervals intervals;
    private final Recorder latency = new Recorder(3);
    private final Recorder wait = new Recorder(3);
    private final LongAdder ops = new LongAdder();
    private final LongAdder errors = new LongAdder();
    private final LongAdder overlaps = new LongAdder();
    private final LongAdder switches = new LongAdder();
    private final AtomicLongArray perWorker;
    private final Checker checker = new Checker();
    private final AtomicInteger lastHolder = new AtomicInteger(-1);
    private final AtomicBoolean running = new AtomicBoolean(true);
    /** Emits once the cell stops: it ends the pauses of paced workers. */
    private final Sinks.One<Boolean> stopping = Sinks.one();
    private final AtomicReference<Throwable> firstError = new AtomicReference<>();
    private final CountDownLatch stopped;
    private final List<Disposable> chains = new ArrayList<>();
    private final List<Thread> threads = new ArrayList<>();

    private long[] workersBefore;
    private long opsBefore;
    private long switchesBefore;
    private long gcBefore;
    private long jitBefore;
    private Map<Long, Long> allocBefore;
    private long cpuBefore;
    private long[] workersDelta;
    private long opsDelta;
    private long switchesDelta;
    private long gcDelta;
    private long jitDelta;
    private long allocDelta;
    private long cpuDelta;
    private int peak;
    private Histogram latencyWindow;
    private Histogram waitWindow;

    /**
     * {@code workers} workers of this JVM, numbered from {@code firstWorker} in the cell, through
     * {@code instances} instances of {@code contender}, taking what {@code workload} says; on one key
     * if {@code contended}, else each on its own. {@code intervals}, if not null, records every
     * critical section measured.
     */
    Round(Contender contender, int workers, int instances, int firstWorker, boolean contended, Workload workload,
            String key, ExecutorService hopExecutor, Intervals intervals) {
        this(contender, instances, firstWorker, contended, choices(workers, contended, workload, key), 0, 0, hopExecutor,
                intervals);
    }

    /**
     * One worker per element of {@code choices} (what that worker draws from), numbered from
     * {@code firstWorker} in the cell, through {@code instances} instances of {@code contender}. A
     * contended worker's body holds the lock for {@code holdMillis} on a timer (a blocking
     * contender's thread sleeps), or, with 0, only hops to another thread. With a
     * {@code thinkMeanNanos} above 0 each worker pauses before every ask, a random time with that
     * mean (exponential: the asks of many workers arrive as a Poisson stream); the wait is measured
     * from the ask.
     */
    Round(Contender contender, int instances, int firstWorker, boolean contended,
            List<List<Workload.Acquisition>> choices, long holdMillis, long thinkMeanNanos, ExecutorService hopExecutor,
            Intervals intervals) {
        this.contender = contender;
        this.workers = choices.size();
        this.instances = instances;
        this.firstWorker = firstWorker;
        this.contended = contended;
        this.holdMillis = holdMillis;
        this.thinkMeanNanos = thinkMeanNanos;
        this.hopExecutor = hopExecutor;
        this.hop = Schedulers.fromExecutorService(hopExecutor, "hop");
        this.intervals = intervals;
        this.perWorker = new AtomicLongArray(workers);
        this.stopped = new CountDownLatch(workers);
        this.choices.addAll(choices);
    }

    private static List<List<Workload.Acquisition>> choices(int workers, boolean contended, Workload workload, String key) {
        List<List<Workload.Acquisition>> choices = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
            choices.add(workload.choices(contended ? key : key + ":" + w, contended));
        }
        return choices;
    }

    /** Creates the instances and starts the workers. */
    void start() {
        contender.beforeCell(instances);
        for (int w = 0; w < workers; w++) {
            int worker = w;
            if (contender.blocking()) {
                Thread thread = new Thread(() -> blockingLoop(worker), "bench-worker-" + w);
                thread.setDaemon(true);
                threads.add(thread);
            } else {
                chains.add(chain(worker).subscribe(null, e -> {
                    failed(e);
                    stopped.countDown();
                }, stopped::countDown));
            }
        }
        threads.forEach(Thread::start);
    }

    void begin() {
        latency.getIntervalHistogram();
        wait.getIntervalHistogram();
        workersBefore = snapshot(perWorker);
        opsBefore = ops.sum();
        switchesBefore = switches.sum();
        gcBefore = JvmProbe.gcMillis();
        jitBefore = JvmProbe.jitMillis();
        allocBefore = JvmProbe.allocatedByThread();
        JvmProbe.resetPeakThreads();
        if (intervals != null) {
            intervals.recording(true);
        }
        cpuBefore = JvmProbe.processCpuNanos();
    }

    void end() {
        cpuDelta = JvmProbe.processCpuNanos() - cpuBefore;
        if (intervals != null) {
            intervals.recording(false);
        }
        opsDelta = ops.sum() - opsBefore;
        switchesDelta = switches.sum() - switchesBefore;
        latencyWindow = latency.getIntervalHistogram();
        waitWindow = wait.getIntervalHistogram();
        long[] workersAfter = snapshot(perWorker);
        workersDelta = new long[workers];
        for (int w = 0; w < workers; w++) {
            workersDelta[w] = workersAfter[w] - workersBefore[w];
        }
        peak = JvmProbe.peakThreads();
        allocDelta = JvmProbe.allocatedBetween(allocBefore, JvmProbe.allocatedByThread());
        gcDelta = JvmProbe.gcMillis() - gcBefore;
        jitDelta = JvmProbe.jitMillis() - jitBefore;
    }

    /** Stops the workers, lets every pair in flight finish and closes the instances. */
    void stop() {
        running.set(false);
        stopping.tryEmitValue(true);
        try {
            if (!stopped.await(60, TimeUnit.SECONDS)) {
                failed(new IllegalStateException(workers - stopped.getCount() + "/" + workers
                        + " workers stopped within 60 s after the cell"));
                chains.forEach(Disposable::dispose);
                threads.forEach(Thread::interrupt);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
        contender.afterCell();
    }

    /** Adds this JVM's figures of the measured window to {@code into}. */
    void addTo(CellResult into) {
        into.ops += opsDelta;
        into.cpuNanos += cpuDelta;
        into.allocatedBytes += allocDelta;
        into.gcMillis += gcDelta;
        into.jitMillis += jitDelta;
        into.latency.add(latencyWindow);
        into.wait.add(waitWindow);
        into.peakThreads = Math.max(into.peakThreads, peak);
        into.errors += errors.sum();
        into.overlaps += overlaps.sum();
        into.switches += switchesDelta;
        for (int w = 0; w < workers; w++) {
            into.perWorker[firstWorker + w] += workersDelta[w];
        }
        Throwable error = firstError.get();
        if (error != null && into.firstError == null) {
            into.firstError = error.toString().replace('\n', ' ');
        }
    }

    /** Pairs completed in the measured window. */
    long ops() {
        return opsDelta;
    }

    /** Pairs completed since {@link #start}. */
    long completed() {
        return ops.sum();
    }

    /** One reactive worker: pairs back to back (or a think time apart) until the cell stops. */
    private Mono<Void> chain(int worker) {
        Mono<Void> pair = Mono.defer(() -> {
            Workload.Acquisition what = next(worker);
            long started = System.nanoTime();
            return contender.run(worker, what, body(worker, started, what))
                    .then(Mono.<Void>fromRunnable(() -> completed(started)))
                    .onErrorResume(e -> {
                        failed(e);
                        return Mono.delay(java.time.Duration.ofMillis(10)).then();
                    });
        });
        Mono<Void> paced = thinkMeanNanos == 0 ? pair
                : Mono.defer(() -> Mono.delay(java.time.Duration.ofNanos(thinkNanos())))
                        .takeUntilOther(stopping.asMono())
                        .then(Mono.defer(() -> running.get() ? pair : Mono.<Void>empty()));
        return paced.repeat(running::get).then();
    }

    /** A pause before the next ask: exponential with mean {@link #thinkMeanNanos}. */
    private long thinkNanos() {
        return (long) (-Math.log(1 - ThreadLocalRandom.current().nextDouble()) * thinkMeanNanos);
    }

    /** One of the worker's choices, at random. */
    private Workload.Acquisition next(int worker) {
        List<Workload.Acquisition> mine = choices.get(worker);
        return mine.size() == 1 ? mine.get(0) : mine.get(ThreadLocalRandom.current().nextInt(mine.size()));
    }

    private Mono<Void> body(int worker, long started, Workload.Acquisition what) {
        if (!contended) {
            return Mono.empty();
        }
        return Mono.defer(() -> {
            long entered = enter(worker, started, what);
            // Leave the critical section on another thread: an overlap would interleave for real.
            Mono<?> later = holdMillis > 0 ? Mono.delay(java.time.Duration.ofMillis(holdMillis)) : Mono.just(worker).publishOn(hop);
            return later.doOnNext(w -> leave(worker, entered, what)).then();
        });
    }

    private void blockingLoop(int worker) {
        try {
            while (running.get()) {
                if (thinkMeanNanos > 0) {
                    Threads.sleep(TimeUnit.NANOSECONDS.toMillis(thinkNanos()));
                }
                Workload.Acquisition what = next(worker);
                long started = System.nanoTime();
                try {
                    contender.runBlocking(worker, what.name(), () -> blockingBody(worker, started, what));
                    completed(started);
                } catch (InterruptedException e) {
                    return;
                } catch (Exception e) {
                    failed(e);
                    Threads.sleep(10);
                }
            }
        } finally {
            stopped.countDown();
        }
    }

    private void blockingBody(int worker, long started, Workload.Acquisition what) {
        if (!contended) {
            return;
        }
        long entered = enter(worker, started, what);
        if (holdMillis > 0) {
            Threads.sleep(holdMillis);
        }
        try {
            hopExecutor.submit(() -> leave(worker, entered, what)).get();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private long enter(int worker, long started, Workload.Acquisition what) {
        long now = System.nanoTime();
        wait.recordValue(now - started);
        if (!checker.enter(what)) {
            overlaps.increment();
        }
        if (lastHolder.getAndSet(worker) != worker) {
            switches.increment();
        }
        perWorker.incrementAndGet(worker);
        return now;
    }

    private void leave(int worker, long entered, Workload.Acquisition what) {
        if (intervals != null) {
            intervals.add(firstWorker + worker, entered, System.nanoTime());
        }
        checker.leave(what);
    }

    private void completed(long started) {
        latency.recordValue(System.nanoTime() - started);
        ops.increment();
    }

    private void failed(Throwable e) {
        errors.increment();
        firstError.compareAndSet(null, e);
    }

    private static long[] snapshot(AtomicLongArray array) {
        long[] out = new long[array.length()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i);
        }
        return out;
    }
}
