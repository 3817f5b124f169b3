package io.reactivelock.nemesis;

import io.reactivelock.nemesis.History.Access;
import io.reactivelock.nemesis.History.Fault;
import io.reactivelock.nemesis.History.Op;
import io.reactivelock.nemesis.History.Renewal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * Checks a {@link History} for every guarantee the library makes (see {@link Kind}) and counts
 * what happened that the guarantees allow (overlaps after Redis lost its data, holders frozen past
 * their lease, accesses the resource refused).
 *
 * <p>What the library promises, and so what counts as a violation: <b>mutual exclusion while the
 * leases are valid and Redis keeps its data</b>. A holder's lease is valid from when its body
 * entered until the earlier of the body's exit and the lease's end as the holder knew it (measured
 * from when the granting or renewing command was sent, so never later than Redis' own expiry). Two
 * such windows of one name must not overlap, unless a fault that loses locks (the lock Redis
 * restarted empty, a Sentinel failover) was under way on the name's lock server between the first
 * one's request and the second one's entry. Beyond the lease (a frozen client) and after a
 * restart-empty only the fencing tokens protect the resource: it must then refuse the stale holder,
 * so no stale write and no lost update are accepted at any time.
 */
final class Checker {

    /**
     * Redis keeps expiry times in whole milliseconds and may expire a key up to 1 ms before the
     * lease the client counted from its send time: a holder entering at most twice that before the
     * previous holder's lease ended is not counted as an overlap.
     */
    static final long EXPIRY_GRANULARITY_NANOS = Duration.ofMillis(2).toNanos();
    /**
     * How long past its lease a body may run before its holder is told (README, "Guarantees and
     * limits", 2: a late timer on a loaded machine), not the run's slack, which bounds the rest.
     */
    static final long TOLD_LATE_MILLIS = 300;

    /** The kinds of violation, each a guarantee the run checks. */
    enum Kind {
        MUTUAL_EXCLUSION("two holders of one name with valid leases at once, and its lock Redis kept its data since the first"
                + " was requested (no restart-empty or failover under way on it in between)"),
        FENCING_ORDER("a holder whose grant came before another's request has a fencing token not below the other's"),
        STALE_WRITE("the resource accepted a write whose fencing token is below one it had already seen for the name"),
        LOST_UPDATE("the resource accepted a write that replaced a value other than the one its operation read"),
        HOLDER_NOT_TOLD("a body kept running past its lease by more than " + TOLD_LATE_MILLIS + " ms, guarantee 2's"
                + " bound (time its JVM did not run left out: frozen, or stalled as a process)"),
        OK_AFTER_LEASE("a body ended `ok` after its lease had ended: its caller was not told"),
        WAITER_STUCK("an acquisition waited past its acquire timeout by more than the slack (time its JVM did not run left"
                + " out)"),
        OPERATION_HUNG("an operation had not ended " + NemesisClient.DRAIN_TIMEOUT.toSeconds()
                + " s after its client stopped starting new ones"),
        RENEWAL_AFTER_BODY("a renewal more than the slack after every body of that lock instance and name had ended, or a"
                + " lock still renewing (activeLeases() > 0) once its client was idle"),
        LOCK_LEFT_BEHIND("a lock key (lock, line, waiters or sleepers) still in Redis the longest TTL plus the slack after every"
                + " client was idle"),
        BLOCKING_CALL("BlockHound caught a blocking call on a reactive thread of a client"),
        CLOCK("a client's nanoTime stamp fell outside the parent's stamps around it: the clocks are not shared");

        private final String guarantee;

        Kind(String guarantee) {
            this.guarantee = guarantee;
        }

        String guarantee() {
            return guarantee;
        }
    }

    /** One violation: when, on which name (or {@code -}), what, and the operations involved. */
    record Violation(Kind kind, long at, String name, String what, List<String> ops, String cause) {}

    /** One occurrence of something the guarantees allow: when, on which name, the operations involved. */
    record Example(long at, String name, List<String> ops) {}

    /**
     * What the checker found: the violations, counts of what the guarantees allow (by description)
     * with the first occurrence of each, and the longest overruns the time bounds allowed.
     */
    record Findings(List<Violation> violations, Map<String, Long> allowed, Map<String, Example> examples,
            long longestOverrunPastLease, long longestWaitPastTimeout) {

        List<Violation> of(Kind kind) {
            return violations.stream().filter(v -> v.kind() == kind).toList();
        }

        /** Stale writes accepted while a fault of {@code kind} was their cause (for a client freeze: the writer's own). */
        long staleWritesDuring(FaultKind kind) {
            return of(Kind.STALE_WRITE).stream().filter(v -> v.cause().equals(kind.label())).count();
        }
    }

    private final History history;
    private final boolean fencedTwin;
    private final long slack;
    private final Map<String, Op> opsById = new HashMap<>();
    private final List<Violation> violations = new ArrayList<>();
    private final Map<String, Long> allowed = new TreeMap<>();
    private final Map<String, Example> examples = new TreeMap<>();
    private long longestOverrunPastLease;
    private long longestWaitPastTimeout;

    private Checker(History history, boolean fencedTwin) {
        this.history = history;
        this.fencedTwin = fencedTwin;
        this.slack = history.settings().slack().toNanos();
        history.ops().forEach(op -> opsById.put(op.id(), op));
    }

    /** Every check, with the fenced twin of the resource. */
    static Findings check(History history) {
        Checker checker = new Checker(history, true);
        checker.exclusion();
        checker.fencingOrder();
        checker.resource();
        checker.timing();
        checker.renewals();
        checker.leftovers();
        return checker.findings();
    }

    /** The negative control: the resource's checks ({@link Kind#STALE_WRITE}, {@link Kind#LOST_UPDATE}) on the unfenced twin. */
    static Findings control(History history) {
        Checker checker = new Checker(history, false);
        checker.resource();
        return checker.findings();
    }

    private Findings findings() {
        violations.sort(Comparator.comparingLong(Violation::at));
        return new Findings(List.copyOf(violations), allowed, examples, longestOverrunPastLease, longestWaitPastTimeout);
    }

    private Map<String, List<Op>> enteredByName() {
        return history.ops().stream().filter(Op::entered)
                .collect(Collectors.groupingBy(Op::name, TreeMap::new, Collectors.toList()));
    }

    /** Overlapping bodies of one name: each is a violation, or allowed and counted by its cause. */
    private void exclusion() {
        Set<String> toldNothing = new HashSet<>();
        for (List<Op> ofName : enteredByName().values()) {
            ofName.sort(Comparator.comparingLong(Op::enter));
            List<Op> inside = new ArrayList<>();
            for (Op b : ofName) {
                inside.removeIf(a -> a.exit() >= 0 && a.exit() <= b.enter());
                for (Op a : inside) {
                    long validOverlap = Math.min(a.validEnd(), b.validEnd()) - b.enter();
                    FaultKind lost = lostLocks(a, b.enter());
                    if (validOverlap <= 0) {
                        count("bodies overlapping while the earlier holder's lease had run out: "
                                + cause(a, a.validEnd(), b.enter()), b.enter(), b.name(), a.id(), b.id());
                    } else if (lost != null) {
                        count("valid leases overlapping after the lock Redis lost its data: " + lost.label(), b.enter(),
                                b.name(), a.id(), b.id());
                        if (a.outcome().equals("ok") && toldNothing.add(a.id())) {
                            count("bodies that ended `ok` although another holder entered while their lease was valid (their"
                                    + " lock lost with the lock Redis' data before their next renewal): " + lost.label(), a.exit(),
                                    a.name(), a.id(), b.id());
                        }
                    } else if (a.validUntil() - b.enter() <= EXPIRY_GRANULARITY_NANOS) {
                        count("a holder entering at most Redis' expiry granularity ("
                                + Duration.ofNanos(EXPIRY_GRANULARITY_NANOS).toMillis() + " ms) before the previous lease ended",
                                b.enter(), b.name(), a.id(), b.id());
                    } else {
                        violations.add(new Violation(Kind.MUTUAL_EXCLUSION, b.enter(), b.name(),
                                a.id() + " (fence " + a.fence() + ") and " + b.id() + " (fence " + b.fence()
                                        + ") held valid leases together for " + millis(validOverlap), List.of(a.id(), b.id()),
                                cause(a, a.start(), b.enter())));
                    }
                }
                inside.add(b);
            }
        }
    }

    /** A holder granted before another was requested must have a lower fencing token. */
    private void fencingOrder() {
        for (List<Op> ofName : enteredByName().values()) {
            List<Op> byEnter = new ArrayList<>(ofName);
            byEnter.sort(Comparator.comparingLong(Op::enter));
            List<Op> byRequest = new ArrayList<>(ofName);
            byRequest.sort(Comparator.comparingLong(Op::leaseStart));
            int next = 0;
            Op highest = null;
            for (Op b : byRequest) {
                while (next < byEnter.size() && byEnter.get(next).enter() < b.leaseStart()) {
                    Op a = byEnter.get(next++);
                    if (highest == null || a.fence() > highest.fence()) {
                        highest = a;
                    }
                }
                if (highest != null && highest.fence() >= b.fence()) {
                    violations.add(new Violation(Kind.FENCING_ORDER, b.enter(), b.name(),
                            highest.id() + " entered before " + b.id() + " requested its lease, yet has fencing token "
                                    + highest.fence() + " >= " + b.fence(), List.of(highest.id(), b.id()),
                            cause(b, highest.enter(), b.enter())));
                }
            }
        }
    }

    /** Stale writes and lost updates at the resource, and what it refused. */
    private void resource() {
        for (Access access : history.accesses()) {
            if (access.fenced() != fencedTwin) {
                continue;
            }
            Op op = opsById.get(access.op());
            long at = op == null ? -1 : access.write() ? op.writeSent() : op.readAt() >= 0 ? op.readAt() : op.enter();
            String by = op == null ? "" : cause(op, op.enter(), at);
            if (!access.accepted()) {
                count("stale " + (access.write() ? "writes" : "reads") + " refused by fencing: " + by, at, access.name(),
                        access.op());
            } else if (access.stale() && !access.write()) {
                count("stale reads accepted (the twin ignores fencing): " + by, at, access.name(), access.op());
            }
            if (access.accepted() && access.write() && access.stale()) {
                violations.add(new Violation(Kind.STALE_WRITE, at, access.name(), access.op() + " wrote with fencing token "
                        + access.fence() + " after the resource had seen " + access.seenBefore(), List.of(access.op()), by));
            }
            if (access.accepted() && access.write() && access.valueBefore() != access.valueRead()) {
                violations.add(new Violation(Kind.LOST_UPDATE, at, access.name(), access.op() + " read " + access.valueRead()
                        + " but replaced " + access.valueBefore() + " with " + (access.valueRead() + 1), List.of(access.op()),
                        by));
            }
        }
    }

    /** Acquire timeouts and lease ends kept, and no operation hung. */
    private void timing() {
        for (Op op : history.ops()) {
            if (op.outcome().equals("hung")) {
                violations.add(new Violation(Kind.OPERATION_HUNG, op.entered() ? op.enter() : op.start(), op.name(),
                        op.id() + " " + (op.entered() ? "inside its body" : "still acquiring") + " when its client drained",
                        List.of(op.id()), ""));
                continue;
            }
            long gaveUp = op.acquiredOrGaveUp();
            long waited = gaveUp - op.start() - frozen(op.client(), op.start(), gaveUp);
            longestWaitPastTimeout = Math.max(longestWaitPastTimeout, waited - op.timeoutNanos());
            if (waited > op.timeoutNanos() + slack) {
                violations.add(new Violation(Kind.WAITER_STUCK, gaveUp, op.name(), op.id() + " waited " + millis(waited)
                        + " (time its JVM did not run left out) with an acquire timeout of " + millis(op.timeoutNanos()),
                        List.of(op.id()), cause(op, op.start(), gaveUp)));
            }
            if (op.outcome().equals("ok") && op.exit() > op.validUntil()) {
                violations.add(new Violation(Kind.OK_AFTER_LEASE, op.exit(), op.name(), op.id() + "'s body ended `ok` "
                        + millis(op.exit() - op.validUntil()) + " after its lease", List.of(op.id()),
                        cause(op, op.validUntil(), op.exit())));
            }
            if (op.entered() && op.exit() >= 0 && op.exit() > op.validUntil()) {
                long overrun = op.exit() - op.validUntil() - frozen(op.client(), op.validUntil(), op.exit());
                longestOverrunPastLease = Math.max(longestOverrunPastLease, overrun);
                if (overrun > TimeUnit.MILLISECONDS.toNanos(TOLD_LATE_MILLIS)) {
                    violations.add(new Violation(Kind.HOLDER_NOT_TOLD, op.exit(), op.name(), op.id() + "'s body ran "
                            + millis(overrun) + " past its lease (time its JVM did not run left out)", List.of(op.id()),
                            cause(op, op.validUntil(), op.exit())));
                }
            }
        }
    }

    /** Renewals only while a body of that lock instance and name runs, and none once idle. */
    private void renewals() {
        Map<String, List<Op>> bodies = history.ops().stream().filter(Op::entered)
                .collect(Collectors.groupingBy(op -> op.client() + "/" + op.instance() + "/" + op.name()));
        Map<String, long[][]> index = new HashMap<>();
        bodies.forEach((key, list) -> {
            list.sort(Comparator.comparingLong(Op::enter));
            long[][] enterAndLatestExit = new long[list.size()][2];
            long latest = Long.MIN_VALUE;
            for (int i = 0; i < list.size(); i++) {
                long exit = list.get(i).exit() < 0 ? Long.MAX_VALUE : list.get(i).exit();
                latest = Math.max(latest, exit);
                enterAndLatestExit[i] = new long[] {list.get(i).enter(), latest};
            }
            index.put(key, enterAndLatestExit);
        });
        for (Renewal renewal : history.renewals()) {
            long[][] spans = index.get(renewal.client() + "/" + renewal.instance() + "/" + renewal.name());
            int at = spans == null ? -1 : lastAtOrBefore(spans, renewal.at());
            if (at < 0 || spans[at][1] < renewal.at() - slack) {
                violations.add(new Violation(Kind.RENEWAL_AFTER_BODY, renewal.at(), renewal.name(), "instance "
                        + renewal.instance() + " of " + renewal.client() + " renewed with no body of that name running",
                        List.of(), ""));
            }
        }
        for (History.Quiescence idle : history.quiescence()) {
            if (!idle.activeLeases().chars().allMatch(c -> c == '0' || c == ',')) {
                violations.add(new Violation(Kind.RENEWAL_AFTER_BODY, idle.at(), "-", idle.client()
                        + " idle, yet its locks' activeLeases() are " + idle.activeLeases(), List.of(), ""));
            }
        }
    }

    private void leftovers() {
        for (String key : history.leftBehind()) {
            violations.add(new Violation(Kind.LOCK_LEFT_BEHIND, history.quiescent(), key, key + " still there "
                    + millis(History.longestTtlNanos() + slack) + " after quiescence", List.of(), ""));
        }
        for (History.Blocking call : history.blocking()) {
            violations.add(new Violation(Kind.BLOCKING_CALL, call.at(), "-", call.client() + ": " + call.method()
                    + " (its stack follows the event in events.log)", List.of(), ""));
        }
        for (History.ClockCheck check : history.clockChecks()) {
            if (!check.consistent()) {
                violations.add(new Violation(Kind.CLOCK, check.clientStamp(), "-", check.client() + " stamped "
                        + check.clientStamp() + ", outside [" + check.parentBefore() + ", " + check.parentAfter() + "]",
                        List.of(), ""));
            }
        }
    }

    private static int lastAtOrBefore(long[][] spans, long at) {
        int low = 0;
        int high = spans.length - 1;
        int found = -1;
        while (low <= high) {
            int mid = (low + high) >>> 1;
            if (spans[mid][0] <= at) {
                found = mid;
                low = mid + 1;
            } else {
                high = mid - 1;
            }
        }
        return found;
    }

    /** Counts what the guarantees allow, keeping its first occurrence (when, on which name, the operations) as an example. */
    private void count(String what, long at, String name, String... ops) {
        if (allowed.merge(what, 1L, Long::sum) == 1) {
            examples.put(what, new Example(at, name, List.of(ops)));
        }
    }

    /**
     * A fault that loses locks, under way on {@code a}'s lock server at some time from {@code a}'s
     * request to {@code to}; null if none.
     */
    private FaultKind lostLocks(Op a, long to) {
        return history.faults().stream()
                .filter(f -> f.kind().losesLocks() && f.reaches(a) && f.start() <= to && f.end() >= a.leaseStart())
                .map(Fault::kind).findFirst().orElse(null);
    }

    /**
     * How long {@code client}'s JVM did not run between {@code from} and {@code to}: frozen by the
     * nemesis, or stalled as a process (see {@link StallWatch}; not a stall of its timers alone,
     * which the library may cause).
     */
    private long frozen(String client, long from, long to) {
        List<long[]> spans = new ArrayList<>();
        history.faults().stream().filter(f -> f.kind() == FaultKind.CLIENT_PAUSE && f.target().equals(client))
                .forEach(f -> spans.add(new long[] {f.start(), f.end()}));
        history.stalls().stream().filter(s -> s.process().equals(client) && s.kind().equals("process"))
                .forEach(s -> spans.add(new long[] {s.from(), s.to()}));
        spans.sort(Comparator.comparingLong(span -> span[0]));
        long total = 0;
        long covered = from;
        for (long[] span : spans) {
            long start = Math.max(covered, span[0]);
            long end = Math.min(to, span[1]);
            if (end > start) {
                total += end - start;
                covered = end;
            }
        }
        return total;
    }


    /**
     * The fault most likely behind what happened to {@code op} between {@code from} and {@code to},
     * among those that reached it: a freeze of its own JVM first, then one that loses locks (under way
     * from its lease's request on), then the other faults in the order of {@link FaultKind};
     * {@code no fault} if none was under way.
     */
    private String cause(Op op, long from, long to) {
        return history.faults().stream()
                .filter(f -> f.reaches(op))
                .filter(f -> f.kind().losesLocks() && op.leaseStart() >= 0
                        ? f.start() <= to && f.end() >= op.leaseStart()
                        : f.start() <= to && f.end() >= from)
                .map(Fault::kind)
                .min(Comparator.comparingInt((FaultKind k) -> k == FaultKind.CLIENT_PAUSE ? -1 : k.ordinal()))
                .map(FaultKind::label)
                .orElse("no fault");
    }

    static String millis(long nanos) {
        return String.format(java.util.Locale.ROOT, "%.1f ms", nanos / 1e6);
    }
}
