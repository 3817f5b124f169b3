package io.reactivelock.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.examples.report.ReportRefreshJob;
import io.reactivelock.examples.report.ReportRefreshJob.Run;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Two instances of the app on one Redis (the first one's embedded redis-server), each ticking the
 * report refresh every 50 ms; a run refreshes two reports of 100 ms each, so runs would overlap.
 */
class ReportRefreshJobTest {

    private static final Duration WAIT = Duration.ofSeconds(60);

    private static final List<String> FAST_JOB = List.of("server.port=0", "example.reports.refresh.every=PT0.05S",
            "example.reports.refresh.lock-at-least-for=PT0.5S", "example.reports.compute-time=100ms");

    /** Starts the app with {@code properties} as command-line arguments, over application.yaml. */
    private static ConfigurableApplicationContext start(List<String> properties) {
        List<String> arguments = new ArrayList<>();
        FAST_JOB.forEach(property -> arguments.add("--" + property));
        properties.forEach(property -> arguments.add("--" + property));
        return new SpringApplicationBuilder(ExampleApplication.class).run(arguments.toArray(String[]::new));
    }

    /** Runs both instances until each has run the job {@code runsEach} times; their runs, in start order. */
    private static List<Run> runBoth(int runsEach, String... properties) {
        List<Run> runs = new ArrayList<>();
        try (ConfigurableApplicationContext first = start(List.of(properties))) {
            String redis = first.getEnvironment().getRequiredProperty("spring.data.redis.url");
            List<String> second = new ArrayList<>(List.of(properties));
            second.add("example.redis.url=" + redis);
            try (ConfigurableApplicationContext other = start(second)) {
                ReportRefreshJob a = first.getBean(ReportRefreshJob.class);
                ReportRefreshJob b = other.getBean(ReportRefreshJob.class);
                await().atMost(WAIT).until(() -> a.runs().size() >= runsEach && b.runs().size() >= runsEach);
                runs.addAll(a.runs());
                runs.addAll(b.runs());
            }
        }
        runs.sort(Comparator.comparingLong(Run::startNanos));
        return runs;
    }

    private static long overlaps(List<Run> inStartOrder) {
        long found = 0;
        for (int i = 1; i < inStartOrder.size(); i++) {
            if (inStartOrder.get(i).startNanos() < inStartOrder.get(i - 1).endNanos()) {
                found++;
            }
        }
        return found;
    }

    @Test
    @DisplayName("two instances run the refresh job one at a time, and start it at most once per lock-at-least-for window")
    void oneInstanceAtATime() {
        List<Run> runs = runBoth(1);

        assertThat(runs).hasSizeGreaterThanOrEqualTo(2).allSatisfy(run -> assertThat(run.refreshed()).containsExactly("daily", "weekly"));
        assertThat(overlaps(runs)).as("runs that started before the previous one ended").isZero();
        for (int i = 1; i < runs.size(); i++) {
            // The window is counted from the run's subscription, which comes after the start it records.
            assertThat(Duration.ofNanos(runs.get(i).startNanos() - runs.get(i - 1).startNanos()))
                    .as("between starts %d and %d", i - 1, i).isGreaterThanOrEqualTo(Duration.ofMillis(500));
        }
    }

    @Test
    @DisplayName("without the lock (reactive-lock.annotations.enabled=false) the runs of the two instances overlap")
    void withoutTheLockRunsOverlap() {
        List<Run> runs = runBoth(2, "reactive-lock.annotations.enabled=false");

        assertThat(overlaps(runs)).as("negative control: runs overlap when nothing prevents it").isPositive();
    }
}
