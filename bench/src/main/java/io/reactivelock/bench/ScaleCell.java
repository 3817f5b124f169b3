package io.reactivelock.bench;

import com.sun.management.GarbageCollectionNotificationInfo;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The scale cell, in its own small-heap JVM: N concurrent {@code withLock} waiters on M names
 * through one {@link ReactiveRedisLock}, all subscribed at once. Reports {@code SCALE key=value}
 * lines for {@link Bench}.
 *
 * <p>Arguments: redis port, waiters, names, time limit in seconds. The waiters are subscribed in
 * one burst from the main thread, then the cell waits until every one has had its turn.
 */
public final class ScaleCell {

    private ScaleCell() {}

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        int waiters = Integer.parseInt(args[1]);
        int names = Integer.parseInt(args[2]);
        long limitSeconds = Long.parseLong(args[3]);
        RedisURI uri = RedisURI.create("redis://127.0.0.1:" + port);
        Duration ttl = Duration.ofSeconds(30);

        RedisClient statsClient = RedisClient.create(uri);
        StatefulRedisConnection<String, String> stats = statsClient.connect();
        ReactiveRedisLock lock = ReactiveRedisLock.create(uri,
                LockOptions.builder().acquireTimeout(Duration.ofMinutes(5))
                        // The cell measures what each waiter costs, so it lifts the default bound.
                        .maxPendingAcquisitions(Math.max(1, waiters)).build());

        // Warm-up: the same code paths, small.
        Flux.range(0, 4000)
                .flatMap(i -> lock.withLock("scale-warmup:" + (i % 100), ttl,
                        Mono.just(i).publishOn(Schedulers.parallel()).then()), 1000)
                .blockLast(Duration.ofMinutes(1));

        System.gc();
        long heapBaseline = heapUsed();
        int threadsBefore = JvmProbe.liveThreads();
        AtomicLong heapPeak = new AtomicLong();
        AtomicLong liveAfterGcPeak = new AtomicLong();
        AtomicLong threadsMin = new AtomicLong(Long.MAX_VALUE);
        AtomicLong threadsMax = new AtomicLong();
        LongAdder completed = new LongAdder();
        LongAdder errors = new LongAdder();
        LongAdder overlaps = new LongAdder();
        AtomicReference<Throwable> firstError = new AtomicReference<>();
        AtomicIntegerArray occupancy = new AtomicIntegerArray(names);
        Thread sampler = new Thread(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                heapPeak.accumulateAndGet(heapUsed(), Math::max);
                int live = JvmProbe.liveThreads();
                threadsMin.accumulateAndGet(live, Math::min);
                threadsMax.accumulateAndGet(live, Math::max);
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "scale-sampler");
        sampler.setDaemon(true);
        watchCollections(liveAfterGcPeak);
        sampler.start();
        Threads.sleep(100);
        stats.sync().configResetstat();
        out("heapBaselineMb", heapBaseline >> 20);
        out("maxHeapMb", Runtime.getRuntime().maxMemory() >> 20);

        long start = System.nanoTime();
        long cpuBefore = JvmProbe.processCpuNanos();
        String run = Long.toString(System.nanoTime(), 36);
        CountDownLatch done = new CountDownLatch(waiters);
        for (int i = 0; i < waiters; i++) {
            int n = i % names;
            Mono<Void> body = Mono.defer(() -> {
                if (occupancy.incrementAndGet(n) > 1) {
                    overlaps.increment();
                }
                return Mono.just(n).publishOn(Schedulers.parallel()).doOnNext(occupancy::decrementAndGet).then();
            });
            lock.withLock("scale:" + run + ":" + n, ttl, body).subscribe(null, e -> {
                errors.increment();
                firstError.compareAndSet(null, e);
                done.countDown();
            }, () -> {
                completed.increment();
                done.countDown();
            });
            if ((i + 1) % 10_000 == 0) {
                // Cheap progress for the parent, in case this JVM runs out of heap before the end.
                out("progress", (i + 1) + " " + liveAfterGcPeak.get());
            }
        }
        long subscribedNanos = System.nanoTime() - start;
        // The live heap with every waiter queued (one full collection, outside the drain figures' point).
        System.gc();
        long heapAllQueued = heapUsed();
        out("subscribedSeconds", String.format(java.util.Locale.ROOT, "%.1f", subscribedNanos / 1e9));
        out("heapAllQueuedMb", heapAllQueued >> 20);
        out("bytesPerWaiter", waiters == 0 ? 0 : Math.max(0, heapAllQueued - heapBaseline) / waiters);
        boolean drained = done.await(limitSeconds, java.util.concurrent.TimeUnit.SECONDS);
        long nanos = System.nanoTime() - start;
        long cpu = JvmProbe.processCpuNanos() - cpuBefore;
        sampler.interrupt();
        sampler.join();
        Map<String, Long> commands = RedisStats.parseCommandStats(stats.sync().info("commandstats"));
        long totalCommands = commands.values().stream().mapToLong(Long::longValue).sum();
        long scripts = commands.getOrDefault("evalsha", 0L) + commands.getOrDefault("eval", 0L);

        out("waiters", waiters);
        out("names", names);
        out("drained", drained);
        out("completed", completed.sum());
        out("errors", errors.sum());
        out("firstError", firstError.get() == null ? "-" : firstError.get().toString().replace('\n', ' '));
        out("overlaps", overlaps.sum());
        out("seconds", String.format(java.util.Locale.ROOT, "%.1f", nanos / 1e9));
        out("heapPeakMb", heapPeak.get() >> 20);
        out("liveAfterGcPeakMb", liveAfterGcPeak.get() >> 20);
        out("threadsBefore", threadsBefore);
        out("threadsMin", threadsMin.get());
        out("threadsMax", threadsMax.get());
        out("cpuSeconds", String.format(java.util.Locale.ROOT, "%.1f", cpu / 1e9));
        out("redisCommands", totalCommands);
        out("scripts", scripts);
        out("gcMillis", JvmProbe.gcMillis());

        stats.close();
        statsClient.shutdown();
        lock.close();
        System.exit(0);
    }

    private static void out(String key, Object value) {
        System.out.println("SCALE " + key + "=" + value);
    }

    private static long heapUsed() {
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /** Tracks the heap in use right after each collection: the live set plus old garbage not yet collected. */
    private static void watchCollections(AtomicLong peak) {
        java.util.Set<String> heapPools = new java.util.HashSet<>();
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == MemoryType.HEAP) {
                heapPools.add(pool.getName());
            }
        }
        for (java.lang.management.GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            ((javax.management.NotificationEmitter) gc).addNotificationListener((notification, handback) -> {
                if (!GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION.equals(notification.getType())) {
                    return;
                }
                GarbageCollectionNotificationInfo info = GarbageCollectionNotificationInfo.from(
                        (javax.management.openmbean.CompositeData) notification.getUserData());
                long used = 0;
                for (Map.Entry<String, java.lang.management.MemoryUsage> e : info.getGcInfo().getMemoryUsageAfterGc().entrySet()) {
                    if (heapPools.contains(e.getKey())) {
                        used += e.getValue().getUsed();
                    }
                }
                peak.accumulateAndGet(used, Math::max);
            }, null, null);
        }
    }
}
