package io.reactivelock.examples.report;

import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.reactive.RedisReactiveCommands;
import io.reactivelock.ReactiveLock;
import io.reactivelock.examples.ExampleProperties;
import io.reactivelock.spring.WithLock;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;
import org.springframework.stereotype.Service;
import reactor.core.publisher.Mono;
import tools.jackson.databind.json.JsonMapper;

/**
 * An expensive report behind a Redis cache, protected from cache stampedes.
 *
 * <p>When a popular entry is missing (first request, or just expired), every request at that
 * moment misses. Without protection each would run the expensive computation. Here a miss takes
 * the lock {@code "report:" + id}: the first request computes and caches the report; the others
 * wait for the lock, then read the cache again (double-checked) and find the winner's report.
 *
 * <p>{@link #refresh} computes a report again under the same lock, taken by the {@link WithLock}
 * annotation: a refresh never runs beside another computation of the report.
 */
@Service
public class ReportService {

    private final ReactiveLock locks;
    private final RedisReactiveCommands<String, String> redis;
    private final JsonMapper json;
    private final ExampleProperties.Reports settings;
    private final boolean lockEnabled;
    private final AtomicLong computations = new AtomicLong();

    public ReportService(ReactiveLock locks, StatefulRedisConnection<String, String> redis, JsonMapper json,
            ExampleProperties properties) {
        this.locks = locks;
        this.redis = redis.reactive();
        this.json = json;
        this.settings = properties.reports();
        this.lockEnabled = properties.lock().enabled();
    }

    public Mono<Report> report(String id) {
        Mono<Report> computeAndCache = Mono.defer(() -> compute(id)).flatMap(this::store);
        Mono<Report> fill = lockEnabled
                // Under the lock, look again: a holder before us may have cached it while we waited.
                // Mono.defer: the body is built once the lock is held, not when withLock is called
                // (it needs no fencing token, so not the lease -> form, which takes one).
                ? locks.withLock("report:" + id, settings.lockTtl(), Mono.defer(() -> cached(id).switchIfEmpty(computeAndCache)))
                // Without the lock (negative-control test only): every missing request computes.
                : computeAndCache;
        return cached(id).switchIfEmpty(fill);
    }

    /**
     * Computes the report again and caches it. Under the report's lock, like a cache fill; one that
     * finds the report being computed right now fails at once with
     * {@link io.reactivelock.LockAcquisitionException} (a 503 answer) instead of computing it twice.
     */
    @WithLock(name = "'report:' + #id", ttl = "${example.reports.lock-ttl}", acquireTimeout = "0s")
    public Mono<Report> refresh(String id) {
        return compute(id).flatMap(this::store);
    }

    /** How many times the expensive computation ran, for all reports: the stampede test reads it. */
    public long computations() {
        return computations.get();
    }

    /** The Redis key of a report in the cache. */
    public static String cacheKey(String id) {
        return "report:" + id;
    }

    private Mono<Report> cached(String id) {
        return redis.get(cacheKey(id)).map(value -> json.readValue(value, Report.class));
    }

    private Mono<Report> store(Report report) {
        return redis.set(cacheKey(report.id()), json.writeValueAsString(report), SetArgs.Builder.px(settings.cacheTtl()))
                .thenReturn(report);
    }

    /** Stands for an expensive query: takes {@code example.reports.compute-time}, on a timer thread. */
    private Mono<Report> compute(String id) {
        long computation = computations.incrementAndGet();
        return Mono.delay(settings.computeTime())
                .map(tick -> new Report(id, "Report " + id + ", computation #" + computation, computation, Instant.now()));
    }
}
