package io.reactivelock.nemesis;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.nemesis.Checker.Findings;
import io.reactivelock.nemesis.Checker.Kind;
import io.reactivelock.nemesis.Checker.Violation;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The nemesis run: client JVMs taking locks on a few hot and many cold names under a random
 * schedule of faults, and a checker over the whole history (see {@link Checker} for what the
 * library promises), with the negative control in the same run (the unfenced twin of the
 * {@link Resource}). The report goes to {@code target/nemesis/}.
 *
 * <p>By default a short run (15 s of faults, extended by at most 40 s until the negative control
 * has caught a writer frozen past its lease) keeps the harness alive in every build;
 * {@code ./mvnw -Psoak -pl reactive-lock verify} runs it for 10 minutes, and
 * {@code -Dnemesis.duration=PT30M}, {@code -Dnemesis.clients=6} and the other properties of
 * {@link Settings} change it.
 */
class NemesisTest {

    private static final Path REPORT = Path.of(System.getProperty("basedir", "."), "target", "nemesis");
    /**
     * The guarantees' timing bounds (how late past its lease a holder is told, how long past its
     * acquire timeout a waiter waits): the short run shares the build's 2 cores with another test
     * JVM, where a client resumed from a freeze was 400 ms catching up, so it reports them and the
     * soak (a run whose length is asked for, -Dnemesis.duration, on a machine of its own) fails on
     * them. Deterministic tests hold the same bounds in every build (docs/guarantees.md, 2).
     */
    private static final Set<Kind> TIMING_BOUNDS = Set.of(Kind.HOLDER_NOT_TOLD, Kind.WAITER_STUCK);

    private static History history;
    private static Findings findings;
    private static Findings control;
    private static Path report;

    @BeforeAll
    static void run() throws Exception {
        Settings settings = Settings.fromSystemProperties(Duration.ofSeconds(15));
        history = NemesisRun.run(settings, REPORT);
        findings = Checker.check(history);
        control = Checker.control(history);
        report = Report.write(history, findings, control, REPORT);
        System.out.println("[nemesis] " + report.toAbsolutePath() + ": " + Report.verdict(findings) + " "
                + Report.controlVerdict(history, control));
    }

    @Test
    void underRandomFaultsNoGuaranteeIsViolated() {
        // The run did what it is for: every client worked, through faults of every lane.
        assertThat(history.ops().stream().filter(op -> op.outcome().equals("ok")).map(History.Op::client).distinct())
                .as("clients that completed operations").hasSize(history.settings().clients());
        assertThat(history.ops().stream().filter(op -> op.outcome().equals("ok") && NemesisClient.viaSentinel(op.name())))
                .as("operations completed through the Sentinels").isNotEmpty();
        assertThat(history.faults().stream().map(f -> f.kind() == FaultKind.CLIENT_PAUSE ? "a client" : f.target()).distinct())
                .as("what the faults were injected into").contains("lock-redis", "proxy", "sentinel", "a client");
        boolean soak = System.getProperty("nemesis.duration") != null;
        List<Violation> counted = findings.violations().stream().filter(v -> soak || !TIMING_BOUNDS.contains(v.kind())).toList();
        findings.violations().stream().filter(v -> !counted.contains(v))
                .forEach(v -> System.out.println("[nemesis] timing bound, checked by the soak: " + v));
        assertThat(counted).as("violations (see %s)", report).isEmpty();
    }

    @Test
    void theUnfencedTwinAcceptsStaleWritesDuringClientPausesAndTheCheckerFindsThem() {
        assertThat(control.staleWritesDuring(FaultKind.CLIENT_PAUSE))
                .as("stale writes accepted during client pauses (see %s)", report)
                .isPositive();
    }
}
