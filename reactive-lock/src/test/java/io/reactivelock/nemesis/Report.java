package io.reactivelock.nemesis;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.reactivelock.nemesis.Checker.Findings;
import io.reactivelock.nemesis.Checker.Kind;
import io.reactivelock.nemesis.Checker.Violation;
import io.reactivelock.nemesis.History.Access;
import io.reactivelock.nemesis.History.Fault;
import io.reactivelock.nemesis.History.Op;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/**
 * Writes a run's report into its directory: {@code report.md} (what ran, operations, faults by
 * kind, violations by kind, what the guarantees allow, each violation with the slice of history
 * around it, the first occurrence of each thing the guarantees allow with its slice, and the same
 * for the negative control), {@code timeline.svg} (the whole run),
 * {@code close-up-N.svg} / {@code control-close-up-N.svg} (a few seconds around the first ones),
 * {@code faults.log} and {@code resource.log} (every fault, every access to the resource).
 */
final class Report {

    private static final long SLICE_NANOS = Duration.ofSeconds(2).toNanos();
    private static final int SLICES_PER_KIND = 10;
    private static final int CLOSE_UPS = 6;
    private static final int SLICE_ROWS = 40;

    private final History history;
    private final Findings findings;
    private final Findings control;
    private final StringBuilder md = new StringBuilder();

    private Report(History history, Findings findings, Findings control) {
        this.history = history;
        this.findings = findings;
        this.control = control;
    }

    /** Writes the report files into {@code directory}; returns the Markdown file. */
    static Path write(History history, Findings findings, Findings control, Path directory) throws IOException {
        Report report = new Report(history, findings, control);
        Files.writeString(directory.resolve("timeline.svg"), Timeline.overview(history, findings, control), UTF_8);
        List<Violation> closeUps = closeUps(history, findings, false, directory, "close-up-");
        List<Violation> controlCloseUps = closeUps(history, control, true, directory, "control-close-up-");
        Files.write(directory.resolve("resource.log"), history.accesses().stream()
                .map(a -> String.join(" ", Long.toString(a.seq()), a.op(), a.name(), a.fenced() ? "fenced" : "unfenced",
                        a.write() ? "write" : "read", Long.toString(a.fence()), Long.toString(a.seenBefore()),
                        Long.toString(a.valueBefore()), a.accepted() ? "accepted" : "refused", Long.toString(a.valueRead())))
                .toList(), UTF_8);
        Files.write(directory.resolve("faults.log"), history.faults().stream()
                .map(f -> String.format(Locale.ROOT, "%.3f %.3f %s %s %s", f.start() / 1e9, f.end() / 1e9, f.kind().label(),
                        f.target(), f.detail()).strip())
                .toList(), UTF_8);
        Path file = directory.resolve("report.md");
        Files.writeString(file, report.markdown(closeUps, controlCloseUps), UTF_8);
        return file;
    }

    private static List<Violation> closeUps(History history, Findings findings, boolean unfenced, Path directory, String prefix)
            throws IOException {
        List<Violation> closeUps = findings.violations().stream().filter(v -> !v.name().equals("-")).limit(CLOSE_UPS).toList();
        for (int i = 0; i < closeUps.size(); i++) {
            Violation v = closeUps.get(i);
            Files.writeString(directory.resolve(prefix + (i + 1) + ".svg"),
                    Timeline.closeUp(history, v, unfenced, v.at() - SLICE_NANOS, v.at() + SLICE_NANOS), UTF_8);
        }
        return closeUps;
    }

    /** One line on the guarantees: how many violations, by kind. */
    static String verdict(Findings findings) {
        return findings.violations().isEmpty()
                ? "**0 violations of the guarantees.**"
                : "**" + findings.violations().size() + " violations of the guarantees:** " + byKind(findings) + ".";
    }

    /**
     * One line on the negative control: the stale writes the unfenced twin accepted, how many during
     * client freezes, and how many of them the fenced twin refused (or never got, its read refused).
     */
    static String controlVerdict(History history, Findings control) {
        List<Violation> stale = control.of(Kind.STALE_WRITE);
        Set<String> acceptedByFenced = history.accesses().stream().filter(a -> a.fenced() && a.write() && a.accepted())
                .map(Access::op).collect(Collectors.toSet());
        long refused = stale.stream().filter(v -> !acceptedByFenced.contains(v.ops().get(0))).count();
        return String.format(Locale.ROOT, "**Negative control (the unfenced twin of the resource, same run): %d stale writes"
                        + " accepted, %d of them while the writer's JVM was frozen past its lease (`client-pause`), and %d lost"
                        + " updates**; the fenced twin refused %d of these %d writes (or the read before them).", stale.size(),
                control.staleWritesDuring(FaultKind.CLIENT_PAUSE), control.of(Kind.LOST_UPDATE).size(), refused, stale.size());
    }

    private static String byKind(Findings findings) {
        return findings.violations().stream()
                .collect(Collectors.groupingBy(Violation::kind, TreeMap::new, Collectors.counting()))
                .entrySet().stream().map(e -> e.getValue() + " " + e.getKey()).collect(Collectors.joining(", "));
    }

    private String markdown(List<Violation> closeUps, List<Violation> controlCloseUps) {
        Settings s = history.settings();
        md.append("# Nemesis run\n\n");
        md.append(verdict(findings)).append("\n\n").append(controlVerdict(history, control)).append("\n\n");
        md.append(String.format(Locale.ROOT, "Faults for %.1f s (asked: %s%s; the whole run took %.1f s); %d client JVMs x %d"
                        + " lock instances (half fair; %d%% of the operations on %d more, non-fair and fair, through the"
                        + " Sentinels) x %d concurrent operation chains; %d hot and %d cold names; nemesis seed %d; slack on the other time bounds (acquire timeout, renewals, cleanup) %d ms; lock and resource on redis-server %s.%n%n",
                (history.nemesisEnd() - history.nemesisStart()) / 1e9, s.duration(), s.extension().isZero() ? ""
                        : ", then until the negative control caught a frozen writer, at most " + s.extension() + " more",
                history.end() / 1e9, s.clients(), s.instances(), NemesisClient.SENTINEL_SHARE_PERCENT, 2, s.workers(), s.hot(), s.cold(), s.seed(), s.slack().toMillis(),
                history.redisVersion()));
        md.append(String.format(Locale.ROOT, "Again (the seed repeats the schedule of faults, not the timing of the clients):"
                        + " `./mvnw -B -Psoak -pl reactive-lock -am verify -Dnemesis.duration=%s -Dnemesis.seed=%d`%n%n",
                s.duration(), s.seed()));

        md.append("## What is checked\n\n");
        md.append("The library promises mutual exclusion while a holder's lease is valid and the lock Redis keeps its data;"
                + " a lease is valid from the body's entry to the earlier of its exit and the lease's end as the holder knew"
                + " it (counted from when the granting or renewing command was sent). After Redis lost its data (killed and"
                + " restarted empty; a Sentinel failover, during which the old master still grants locks to the clients"
                + " connected to it until it is demoted, and the new master never learns of them) or once a holder"
                + " outlived its lease (its JVM frozen), two bodies may overlap: then the"
                + " fencing tokens must protect the resource, which refuses a token below the highest it has seen for the name"
                + " (reads included), so it never accepts a stale write nor loses an update. The resource keeps each counter"
                + " twice: the fenced twin (checked for the guarantees) and an unfenced twin that accepts every token, the"
                + " negative control: every access goes to both in one script call, so they see the same holders at the same"
                + " moments. Every kind below is a violation of a guarantee:\n\n");
        md.append("| kind | guarantee broken when |\n| --- | --- |\n");
        for (Kind kind : Kind.values()) {
            md.append("| ").append(kind).append(" | ").append(kind.guarantee()).append(" |\n");
        }

        operations();
        faults();
        stalls();

        md.append("\n## Violations by kind\n\n| kind | count |\n| --- | ---: |\n");
        for (Kind kind : Kind.values()) {
            md.append("| ").append(kind).append(" | ").append(findings.of(kind).size()).append(" |\n");
        }
        md.append("\n## What the guarantees allow, as observed\n\n");
        if (findings.allowed().isEmpty()) {
            md.append("Nothing: no overlapping bodies and no access refused.\n");
        } else {
            md.append("| what (cause: the fault under way, the holder's own freeze first) | count |\n| --- | ---: |\n");
            findings.allowed().forEach((what, count) -> md.append("| ").append(what).append(" | ").append(count).append(" |\n"));
        }
        md.append(String.format(Locale.ROOT, "%nLock keys (not fencing records) when every client was idle: %s.%n",
                history.leftAtQuiescence().isEmpty() ? "none"
                        : history.leftAtQuiescence().size() + (history.keysGone() < 0
                                ? ", some still there after the longest TTL plus the slack"
                                : ", all gone " + Checker.millis(history.keysGone() - history.quiescent()) + " later")));
        md.append(String.format(Locale.ROOT, "%nLongest a body ran past its lease (time its JVM did not run left out: frozen by the"
                        + " nemesis, or stalled as a process, see Stalls): %s;"
                        + " longest an acquisition went past its acquire timeout (same): %s. Allowed: %d ms past the lease"
                        + " (guarantee 2), %d ms past the acquire timeout (the slack).%n",
                Checker.millis(Math.max(0, findings.longestOverrunPastLease())),
                Checker.millis(Math.max(0, findings.longestWaitPastTimeout())), Checker.TOLD_LATE_MILLIS, s.slack().toMillis()));

        md.append("\n## Timeline\n\n![timeline](timeline.svg)\n\n");
        md.append("Faults by kind (one row per client for its freezes), who held each hot name (orange where two bodies were"
                + " inside at once: allowed or not, see above), operations ended per column by outcome, and a red line per"
                + " violation (hover for details); purple marks: stale writes the unfenced twin accepted.\n");

        md.append("\n## Violations\n\n");
        violations(findings, closeUps, "close-up-", 0);

        md.append("\n## What the guarantees allow: the first of each\n\n");
        findings.examples().forEach((what, example) -> {
            md.append(String.format(Locale.ROOT, "### %s, at %.3f s on `%s`%n%n", what, example.at() / 1e9, example.name()));
            slice(example.at(), example.name(), example.ops(), false);
        });
        if (findings.examples().isEmpty()) {
            md.append("Nothing happened that needed them.\n");
        }

        md.append("\n## Negative control: the unfenced twin\n\n").append(controlVerdict(history, control)).append("\n\n");
        md.append("The unfenced twin saw the same accesses at the same moments as the fenced one, but accepted every token;"
                + " the checker must find its stale writes (a holder frozen past its lease writing after a newer holder read)"
                + " and the updates they lost.\n\n| kind | count |\n| --- | ---: |\n");
        for (Kind kind : List.of(Kind.STALE_WRITE, Kind.LOST_UPDATE)) {
            md.append("| ").append(kind).append(" | ").append(control.of(kind).size()).append(" |\n");
        }
        if (!control.allowed().isEmpty()) {
            md.append("\n| also seen at the unfenced twin | count |\n| --- | ---: |\n");
            control.allowed().forEach((what, count) -> md.append("| ").append(what).append(" | ").append(count).append(" |\n"));
        }
        md.append("\n");
        violations(control, controlCloseUps, "control-close-up-", 1000);
        return md.toString();
    }

    private void operations() {
        List<Op> ops = history.ops();
        long entered = ops.stream().filter(Op::entered).count();
        Map<String, Long> outcomes = ops.stream()
                .collect(Collectors.groupingBy(Op::outcome, TreeMap::new, Collectors.counting()));
        long writes = history.accesses().stream().filter(a -> a.fenced() && a.write()).count();
        long writesAccepted = history.accesses().stream().filter(a -> a.fenced() && a.write() && a.accepted()).count();
        long readsRefused = history.accesses().stream().filter(a -> a.fenced() && !a.write() && !a.accepted()).count();
        long seconds = Math.max(1, (history.quiescent() - history.nemesisStart()) / 1_000_000_000L);
        md.append("\n## Operations\n\n");
        md.append(String.format(Locale.ROOT, "%d attempted (%.1f per second), %d entered their body, %d completed (`ok`);"
                        + " %d writes reached the fenced twin, %d accepted; it refused %d reads. %d lease renewals, %d leases"
                        + " lost.%n%n",
                ops.size(), (double) ops.size() / seconds, entered, outcomes.getOrDefault("ok", 0L), writes, writesAccepted,
                readsRefused, history.renewals().size(), history.losses().size()));
        md.append("| outcome | count |\n| --- | ---: |\n");
        outcomes.forEach((outcome, count) -> md.append("| ").append(outcome).append(" | ").append(count).append(" |\n"));
        long pastTtl = ops.stream().filter(op -> op.entered() && op.bodyMillis() * 1_000_000L > op.ttlNanos()).count();
        long fair = ops.stream().filter(Op::fair).count();
        long hot = ops.stream().filter(op -> op.name().startsWith("hot-")).count();
        long sentinel = ops.stream().filter(op -> NemesisClient.viaSentinel(op.name())).count();
        md.append(String.format(Locale.ROOT, "%nOf them: %d on hot names, %d in fair mode, %d on the Sentinel-watched Redis,"
                + " %d with a body longer than its TTL that entered it, %d with a random cancel planned.%n", hot, fair, sentinel,
                pastTtl,
                ops.stream().filter(op -> op.cancelMillis() >= 0).count()));
    }

    private void faults() {
        md.append("\n## Faults\n\n| kind | count | total | longest | what |\n| --- | ---: | ---: | ---: | --- |\n");
        for (FaultKind kind : FaultKind.values()) {
            List<Fault> ofKind = history.faults().stream().filter(f -> f.kind() == kind).toList();
            long total = ofKind.stream().mapToLong(f -> f.end() - f.start()).sum();
            long longest = ofKind.stream().mapToLong(f -> f.end() - f.start()).max().orElse(0);
            md.append(String.format(Locale.ROOT, "| %s | %d | %.1f s | %.2f s | %s |%n", kind.label(), ofKind.size(), total / 1e9,
                    longest / 1e9, kind.description()));
        }
        md.append(String.format(Locale.ROOT, "%n%d faults in all, each with its start and end (seconds since the run's origin)"
                + " in [`faults.log`](faults.log) and on `timeline.svg`; the clients' events are in `events.log`, the"
                + " resource's accesses in `resource.log` (seq op name twin kind fence seen-before value-before outcome"
                + " value-read).%n",
                history.faults().size()));
    }

    private void stalls() {
        md.append("\n## Stalls\n\n");
        md.append("Each JVM watched itself (`StallWatch`): a *process* stall is a thread of its own waking up more than "
                + StallWatch.THRESHOLD.toMillis() + " ms late (the JVM did not run: CPU starvation, a GC pause; a client's"
                + " own freezes by the nemesis show here too), a *timers* stall is Reactor's parallel scheduler firing no"
                + " timer for that long while the JVM ran (its threads blocked or busy; their stacks are in the client's"
                + " log).\n\n");
        if (history.stalls().isEmpty()) {
            md.append("None.\n");
            return;
        }
        md.append("| JVM | kind | count | total | longest | GC in them |\n| --- | --- | ---: | ---: | ---: | ---: |\n");
        history.stalls().stream()
                .collect(Collectors.groupingBy(s -> s.process() + " | " + s.kind(), TreeMap::new, Collectors.toList()))
                .forEach((key, list) -> md.append(String.format(Locale.ROOT, "| %s | %d | %.1f s | %.2f s | %d ms |%n", key,
                        list.size(), list.stream().mapToLong(s -> s.to() - s.from()).sum() / 1e9,
                        list.stream().mapToLong(s -> s.to() - s.from()).max().orElse(0) / 1e9,
                        list.stream().mapToLong(History.Stall::gcMillis).sum())));
    }

    private void violations(Findings found, List<Violation> closeUps, String closeUpPrefix, int firstNumber) {
        if (found.violations().isEmpty()) {
            md.append("None.\n");
            return;
        }
        Map<Kind, Integer> shown = new HashMap<>();
        int number = firstNumber;
        for (Violation v : found.violations()) {
            number++;
            int count = shown.merge(v.kind(), 1, Integer::sum);
            if (count > SLICES_PER_KIND) {
                continue;
            }
            md.append(String.format(Locale.ROOT, "### %d. %s at %.3f s on `%s`%n%n%s (cause: %s).%n%n", number, v.kind(),
                    v.at() / 1e9, v.name(), v.what(), v.cause().isEmpty() ? "-" : v.cause()));
            int closeUp = closeUps.indexOf(v);
            if (closeUp >= 0) {
                md.append("![close-up](").append(closeUpPrefix).append(closeUp + 1).append(".svg)\n\n");
            }
            slice(v.at(), v.name(), v.ops(), found == control);
        }
        shown.forEach((kind, count) -> {
            if (count > SLICES_PER_KIND) {
                md.append(String.format(Locale.ROOT, "%d more %s not shown with their slice (all are in the table above"
                        + " and in `events.log`).%n%n", count - SLICES_PER_KIND, kind));
            }
        });
    }

    /**
     * The history around what happened {@code at} on {@code name} ({@code -}: none) to {@code ops}:
     * faults under way and operations on that name, with their accesses to one twin of the resource.
     */
    private void slice(long at, String name, List<String> involved, boolean unfencedTwin) {
        long from = at - SLICE_NANOS;
        long to = at + SLICE_NANOS;
        List<Fault> faults = history.faults().stream().filter(f -> f.start() <= to && f.end() >= from).toList();
        md.append("Faults from ").append(seconds(from)).append(" to ").append(seconds(to)).append(": ");
        md.append(faults.isEmpty() ? "none" : faults.stream().map(f -> f.kind().label() + " " + f.target() + " "
                + seconds(f.start()) + "-" + seconds(f.end()) + (f.detail().isEmpty() ? "" : " (" + f.detail() + ")"))
                .collect(Collectors.joining("; "))).append(".\n\n");
        List<History.Stall> stalls = history.stalls().stream().filter(s -> s.from() <= to && s.to() >= from).toList();
        if (!stalls.isEmpty()) {
            md.append("Stalls: ").append(stalls.stream().map(s -> s.process() + " " + s.kind() + " " + seconds(s.from()) + "-"
                    + seconds(s.to()) + " (GC " + s.gcMillis() + " ms)").collect(Collectors.joining("; "))).append(".\n\n");
        }
        if (name.equals("-")) {
            return;
        }
        Predicate<Op> near = op -> op.name().equals(name) && op.start() <= to && (op.end() < 0 || op.end() >= from);
        List<Op> ops = new ArrayList<>(history.ops().stream().filter(near).sorted(Comparator.comparingLong(Op::start)).toList());
        if (ops.size() > SLICE_ROWS) {
            ops = ops.stream().sorted(Comparator.comparingLong(op -> Math.abs(op.start() - at))).limit(SLICE_ROWS)
                    .sorted(Comparator.comparingLong(Op::start)).collect(Collectors.toCollection(ArrayList::new));
        }
        Map<String, List<Access>> accesses = new HashMap<>();
        for (Access access : history.accesses()) {
            if (access.name().equals(name) && access.fenced() != unfencedTwin) {
                accesses.computeIfAbsent(access.op(), id -> new ArrayList<>()).add(access);
            }
        }
        md.append("| op | client/lock | start | enter | lease requested | valid until | exit | end | fence | ")
                .append(unfencedTwin ? "unfenced" : "fenced").append(" twin | outcome |\n");
        md.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |\n");
        for (Op op : ops) {
            String id = involved.contains(op.id()) ? "**" + op.id() + "**" : op.id();
            String resource = accesses.getOrDefault(op.id(), List.of()).stream()
                    .map(a -> (a.write() ? "w" : "r") + (a.accepted() ? "+" : "-") + " #" + a.seq()
                            + (a.stale() ? " stale(seen " + a.seenBefore() + ")" : "") + (a.write() ? " " + a.valueBefore() + "->"
                            + (a.valueRead() + 1) : " =" + a.valueBefore()))
                    .collect(Collectors.joining(", "));
            md.append(String.format(Locale.ROOT, "| %s | %s/%d | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n", id, op.client(),
                    op.instance(), seconds(op.start()), seconds(op.enter()), seconds(op.leaseStart()), seconds(op.validUntil()),
                    seconds(op.exit()), seconds(op.end()), op.entered() ? Long.toString(op.fence()) : "", resource,
                    op.outcome()));
        }
        md.append("\n");
    }

    private static String seconds(long nanos) {
        return nanos < 0 ? "" : String.format(Locale.ROOT, "%.3f", nanos / 1e9);
    }
}
