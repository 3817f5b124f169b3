package io.reactivelock.examples.report;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.spring.WithLock;
import io.reactivelock.spring.WithLock.OnBusy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedDeque;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Recomputes the popular reports ({@code example.reports.refresh.popular}) on a schedule, so that
 * they are rarely missing from the cache. Every instance of the app ticks; the lock
 * {@code reports:refresh} makes one instance at a time run the job, and keeps it for
 * {@code lock-at-least-for} so that the ticks of the others in that window are skipped, not queued.
 */
@Component
public class ReportRefreshJob {

    private static final Logger log = LoggerFactory.getLogger(ReportRefreshJob.class);
    private static final int RUNS_KEPT = 100;

    private final ReportService reports;
    private final List<String> popular;
    private final ConcurrentLinkedDeque<Run> runs = new ConcurrentLinkedDeque<>();

    public ReportRefreshJob(ReportService reports, @Value("${example.reports.refresh.popular}") List<String> popular) {
        this.reports = reports;
        this.popular = List.copyOf(popular);
    }

    /**
     * One run of the job.
     *
     * @param startNanos when it started, {@link System#nanoTime()}
     * @param endNanos when it ended, before its lock was released
     * @param refreshed the reports it computed again
     */
    public record Run(long startNanos, long endNanos, List<String> refreshed) {}

    @Scheduled(fixedRateString = "${example.reports.refresh.every}", initialDelayString = "${example.reports.refresh.every}")
    @WithLock(name = "'reports:refresh'", ttl = "${example.reports.refresh.lock-at-most-for}",
            lockAtLeastFor = "${example.reports.refresh.lock-at-least-for}", acquireTimeout = "0s", onBusy = OnBusy.SKIP)
    public Mono<Void> refreshPopularReports() {
        // Deferred: Spring calls a reactive @Scheduled method once and subscribes to its result at every tick.
        return Mono.defer(() -> {
            long start = System.nanoTime();
            return Flux.fromIterable(popular)
                    // A report whose lock is busy is being computed right now (a cache fill): fresh enough.
                    .concatMap(id -> reports.refresh(id).map(Report::id).onErrorResume(ReportRefreshJob::busy, busy -> Mono.empty()))
                    .collectList()
                    .doOnNext(refreshed -> {
                        long end = System.nanoTime();
                        runs.addLast(new Run(start, end, refreshed));
                        if (runs.size() > RUNS_KEPT) {
                            runs.pollFirst();
                        }
                        log.info("Refreshed the reports {} in {} ms", refreshed, (end - start) / 1_000_000);
                    })
                    .then();
        });
    }

    /** The last runs of this instance, oldest first. */
    public List<Run> runs() {
        return new ArrayList<>(runs);
    }

    private static boolean busy(Throwable error) {
        return error instanceof LockAcquisitionException failed && failed.reason() == LockAcquisitionException.Reason.BUSY;
    }
}
