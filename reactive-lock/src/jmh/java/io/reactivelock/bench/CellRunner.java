package io.reactivelock.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
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
import reactor.core.scheduler.Scheduler;

/**
 * Runs one round of one cell: starts the workers, warms up, measures for a fixed time, stops
 * the workers and waits until every started pair has finished.
 */
final class CellRunner {

    private final RedisStats redis;
    private final Scheduler hop;
    private final ExecutorService hopExecutor;
    private final Settings settings;

    CellRunner(RedisStats redis, Scheduler hop, ExecutorService hopExecutor, Settings settings) {
        this.redis = redis;
        this.hop = hop;
        this.hopExecutor = hopExecutor;
        this.settings = settings;
    }

    /** Runs one round of a cell and adds its figures to {@code into}. */
    void run(Scenario scenario, Contender contender, String contenderId, int round, CellResult into) {
        new Round(scenario, contender, contenderId, "r" + round).run(into, settings.warmupMillis, settings.measureMillis);
    }

    /** Runs a cell only to warm the JIT up; nothing is kept. */
    void warmUp(Scenario scenario, Contender contender, String contenderId) {
        new Round(scenario, contender, contenderId, "jit").run(new CellResult(scenario, contender.name()),
                settings.jitWarmupMillis, 0);
    }

    private final class Round {
        private final Scenario scenario;
        private final Contender contender;
        private final String[] keys;
        private final Recorder latency = new Recorder(3);
        private final Recorder wait = new Recorder(3);
        private final LongAdder ops = new LongAdder();
        private final LongAdder errors = new LongAdder();
        private final LongAdder overlaps = new LongAdder();
        private final LongAdder switches = new LongAdder();
        private final AtomicLongArray perWorker;
        private final AtomicInteger occupancy = new AtomicInteger();
        private final AtomicInteger lastHolder = new AtomicInteger(-1);
        private final AtomicBoolean running = new AtomicBoolean(true);
        private final AtomicReference<Throwable> firstError = new AtomicReference<>();

        Round(Scenario scenario, Contender contender, String contenderId, String round) {
            this.scenario = scenario;
            this.contender = contender;
            this.perWorker = new AtomicLongArray(scenario.workers);
            this.keys = new String[scenario.workers];
            String base = "bench:" + scenario + ":" + contenderId + ":" + round + ":" + System.nanoTime();
            for (int w = 0; w < keys.length; w++) {
                keys[w] = scenario.contended ? base : base + ":" + w;
            }
        }

        void run(CellResult into, long warmupMillis, long measureMillis) {
            int workers = scenario.workers;
            contender.beforeCell(workers, scenario.contended);
            CountDownLatch stopped = new CountDownLatch(workers);
            List<Disposable> chains = new ArrayList<>();
            List<Thread> threads = new ArrayList<>();
            for (int w = 0; w < workers; w++) {
                int worker = w;
                if (contender.blocking()) {
                    Thread thread = new Thread(() -> blockingLoop(worker, stopped), "bench-worker-" + w);
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

            long monitorMillis = measureMillis == 0 ? 0 : Math.min(300, warmupMillis / 4 + 1);
            Threads.sleep(warmupMillis / 2);
            long[] monitor = monitorMillis == 0 ? new long[2] : redis.monitorSample(monitorMillis);
            Threads.sleep(Math.max(0, warmupMillis - warmupMillis / 2 - monitorMillis));

            // Measure.
            redis.reset();
            latency.getIntervalHistogram();
            wait.getIntervalHistogram();
            long[] workersBefore = snapshot(perWorker);
            long opsBefore = ops.sum();
            long switchesBefore = switches.sum();
            long gcBefore = JvmProbe.gcMillis();
            long jitBefore = JvmProbe.jitMillis();
            Map<Long, Long> allocBefore = JvmProbe.allocatedByThread();
            JvmProbe.resetPeakThreads();
            double redisCpuBefore = redis.cpuSeconds();
            long cpuBefore = JvmProbe.processCpuNanos();
            long start = System.nanoTime();
            Threads.sleep(measureMillis);
            long cpuAfter = JvmProbe.processCpuNanos();
            double redisCpuAfter = redis.cpuSeconds();
            long end = System.nanoTime();
            long opsAfter = ops.sum();
            long switchesAfter = switches.sum();
            Histogram lat = latency.getIntervalHistogram();
            Histogram wt = wait.getIntervalHistogram();
            long[] workersAfter = snapshot(perWorker);
            int peak = JvmProbe.peakThreads();
            Map<Long, Long> allocAfter = JvmProbe.allocatedByThread();
            long gcAfter = JvmProbe.gcMillis();
            long jitAfter = JvmProbe.jitMillis();
            Map<String, Long> commands = redis.commandCalls();

            // Stop, and let every pair in flight finish.
            running.set(false);
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

            into.rounds++;
            into.roundRates.add((opsAfter - opsBefore) * 1e9 / Math.max(1, end - start));
            into.ops += opsAfter - opsBefore;
            into.nanos += end - start;
            into.cpuNanos += cpuAfter - cpuBefore;
            into.redisCpuSeconds += redisCpuAfter - redisCpuBefore;
            into.allocatedBytes += JvmProbe.allocatedBetween(allocBefore, allocAfter);
            into.gcMillis += gcAfter - gcBefore;
            into.jitMillis += jitAfter - jitBefore;
            into.latency.add(lat);
            into.wait.add(wt);
            into.peakThreads = Math.max(into.peakThreads, peak);
            into.errors += errors.sum();
            into.overlaps += overlaps.sum();
            into.switches += switchesAfter - switchesBefore;
            into.monitorClient += monitor[0];
            into.monitorLua += monitor[1];
            commands.forEach((name, calls) -> into.commands.merge(name, calls, Long::sum));
            for (int w = 0; w < workers; w++) {
                into.perWorker[w] += workersAfter[w] - workersBefore[w];
            }
            Throwable error = firstError.get();
            if (error != null && into.firstError == null) {
                into.firstError = error.toString();
            }
        }

        /** One reactive worker: pairs back to back until the cell stops. */
        private Mono<Void> chain(int worker) {
            return Mono.defer(() -> {
                        long started = System.nanoTime();
                        return contender.run(worker, keys[worker], body(worker, started))
                                .then(Mono.fromRunnable(() -> completed(started)))
                                .onErrorResume(e -> {
                                    failed(e);
                                    return Mono.delay(java.time.Duration.ofMillis(10)).then();
                                });
                    })
                    .repeat(running::get)
                    .then();
        }

        private Mono<Void> body(int worker, long started) {
            if (!scenario.contended) {
                return Mono.empty();
            }
            return Mono.defer(() -> {
                enter(worker, started);
                // Leave the critical section on another thread: an overlap would interleave for real.
                return Mono.just(worker).publishOn(hop).doOnNext(w -> occupancy.decrementAndGet()).then();
            });
        }

        private void blockingLoop(int worker, CountDownLatch stopped) {
            try {
                while (running.get()) {
                    long started = System.nanoTime();
                    try {
                        contender.runBlocking(worker, keys[worker], () -> blockingBody(worker, started));
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

        private void blockingBody(int worker, long started) {
            if (!scenario.contended) {
                return;
            }
            enter(worker, started);
            try {
                hopExecutor.submit(occupancy::decrementAndGet).get();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }

        private void enter(int worker, long started) {
            wait.recordValue(System.nanoTime() - started);
            if (occupancy.incrementAndGet() > 1) {
                overlaps.increment();
            }
            if (lastHolder.getAndSet(worker) != worker) {
                switches.increment();
            }
            perWorker.incrementAndGet(worker);
        }

        private void completed(long started) {
            latency.recordValue(System.nanoTime() - started);
            ops.increment();
        }

        private void failed(Throwable e) {
            errors.increment();
            firstError.compareAndSet(null, e);
        }
    }

    private static long[] snapshot(AtomicLongArray array) {
        long[] out = new long[array.length()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i);
        }
        return out;
    }
}
