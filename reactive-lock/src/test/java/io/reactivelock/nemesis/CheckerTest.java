package io.reactivelock.nemesis;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.nemesis.Checker.Findings;
import io.reactivelock.nemesis.Checker.Kind;
import io.reactivelock.nemesis.History.Fault;
import io.reactivelock.nemesis.History.Op;
import io.reactivelock.nemesis.History.Stall;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The checker on small made-up histories: a fault excuses only what it reached (a Sentinel failover
 * the Sentinel's names, a restart-empty the proxied ones), and only the time a client's JVM did not
 * run is left out of its time bounds, not a stall of its timers alone.
 */
class CheckerTest {

    private static final long MS = 1_000_000;
    private static final long TTL = 1200 * MS;
    private static final Settings SETTINGS = new Settings(Duration.ofSeconds(10), Duration.ZERO, 2, 2, 1, 1, 1, 1,
            Duration.ofSeconds(2));

    @Test
    void aFailoverExcusesAnOverlapOfValidLeasesOnTheSentinelsNamesOnly() {
        Fault failover = new Fault(FaultKind.SENTINEL_FAILOVER, "sentinel", 1000 * MS, 12_000 * MS, "");

        Findings onSentinel = Checker.check(history(List.of(failover), List.of(), overlapping("hot-s0")));
        Findings onProxied = Checker.check(history(List.of(failover), List.of(), overlapping("hot-0")));

        assertThat(onSentinel.violations()).as("violations on a Sentinel name").isEmpty();
        assertThat(onSentinel.allowed()).containsKey("valid leases overlapping after the lock Redis lost its data:"
                + " sentinel-failover");
        assertThat(onProxied.of(Kind.MUTUAL_EXCLUSION)).as("overlaps on a proxied name").hasSize(1);
    }

    @Test
    void aRestartEmptyExcusesAnOverlapOfValidLeasesOnTheProxiedNamesOnly() {
        Fault restart = new Fault(FaultKind.REDIS_RESTART_EMPTY, "lock-redis", 10_100 * MS, 10_300 * MS, "");

        assertThat(Checker.check(history(List.of(restart), List.of(), overlapping("hot-0"))).violations())
                .as("violations on a proxied name").isEmpty();
        assertThat(Checker.check(history(List.of(restart), List.of(), overlapping("hot-s0"))).of(Kind.MUTUAL_EXCLUSION))
                .as("overlaps on a Sentinel name").hasSize(1);
    }

    @Test
    void aWaiterIsNotStuckForTheTimeItsJvmDidNotRunButIsForATimersStall() {
        // Acquire timeout 500 ms, gave up 3.6 s after it started: 3.1 s late, 1.1 s past the slack.
        Op waiter = op("c0-1", "hot-0", 10_000 * MS, -1, -1, 13_600 * MS, "acquire-busy");
        Stall process = new Stall("c0", "process", 10_200 * MS, 12_000 * MS, 0);
        Stall timers = new Stall("c0", "timers", 10_200 * MS, 12_000 * MS, 0);

        assertThat(Checker.check(history(List.of(), List.of(process), List.of(waiter))).of(Kind.WAITER_STUCK))
                .as("stuck, the JVM not running for 1.8 s of it").isEmpty();
        assertThat(Checker.check(history(List.of(), List.of(timers), List.of(waiter))).of(Kind.WAITER_STUCK))
                .as("stuck, the JVM's timers stalled for 1.8 s of it").hasSize(1);
    }

    @Test
    void aBodyRunningPastItsLeaseIsAllowedGuarantee2sBoundNotTheSlack() {
        // Lease 10.0 to 11.2 s; bodies cancelled (failed) 200 ms and 400 ms after it ended.
        Op toldInTime = op("c0-1", "hot-0", 10_000 * MS, 10_000 * MS, 11_400 * MS, 11_400 * MS, "lost");
        Op toldLate = op("c0-2", "hot-1", 10_000 * MS, 10_000 * MS, 11_600 * MS, 11_600 * MS, "lost");

        assertThat(Checker.check(history(List.of(), List.of(), List.of(toldInTime))).of(Kind.HOLDER_NOT_TOLD))
                .as("told 200 ms after the lease").isEmpty();
        assertThat(Checker.check(history(List.of(), List.of(), List.of(toldLate))).of(Kind.HOLDER_NOT_TOLD))
                .as("told 400 ms after the lease, within the 2 s slack").hasSize(1);
    }

    @Test
    void aBodyEndingOkAfterItsLeaseIsAViolation() {
        Op okAfter = op("c0-1", "hot-0", 10_000 * MS, 10_000 * MS, 11_250 * MS, 11_250 * MS, "ok");

        assertThat(Checker.check(history(List.of(), List.of(), List.of(okAfter))).of(Kind.OK_AFTER_LEASE))
                .as("ok 50 ms after its lease").hasSize(1);
    }

    /** Two holders of {@code name} on different clients, the second entering while the first's lease is valid. */
    private static List<Op> overlapping(String name) {
        return List.of(op("c0-1", name, 10_000 * MS, 10_000 * MS, 10_800 * MS, 10_800 * MS, "ok"),
                op("c1-1", name, 10_400 * MS, 10_400 * MS, 10_600 * MS, 10_600 * MS, "ok"));
    }

    private static Op op(String id, String name, long start, long enter, long exit, long end, String outcome) {
        String client = id.substring(0, id.indexOf('-'));
        long lease = enter < 0 ? -1 : enter;
        return new Op(id, client, 0, name, false, TTL, 500 * MS, 10, -1, start, enter, lease, enter < 0 ? -1 : enter,
                -1, -1, exit, lease < 0 ? -1 : lease + TTL, end, outcome);
    }

    private static History history(List<Fault> faults, List<Stall> stalls, List<Op> ops) {
        return new History(SETTINGS, "test", 0, 20_000 * MS, 20_000 * MS, 20_000 * MS, 20_000 * MS, ops, List.of(), faults,
                List.of(), List.of(), List.of(), List.of(), List.of(), List.of(), List.of(), stalls);
    }
}
