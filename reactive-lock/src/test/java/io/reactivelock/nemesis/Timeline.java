package io.reactivelock.nemesis;

import io.reactivelock.nemesis.Checker.Findings;
import io.reactivelock.nemesis.Checker.Violation;
import io.reactivelock.nemesis.History.Access;
import io.reactivelock.nemesis.History.Fault;
import io.reactivelock.nemesis.History.Op;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The run's pictures, as SVG text: the whole run (faults by kind, who held each hot name, operations
 * ended per interval by outcome, violations), and a close-up of a few seconds around one violation
 * (every operation on its name, its wait, its body, where its lease ended, its accesses to the
 * resource, and the faults under way).
 */
final class Timeline {

    private static final int LEFT = 170;
    private static final int WIDTH = 1200;
    private static final int ROW = 16;
    private static final String[] CLIENT_COLOURS =
            {"#4e79a7", "#59a14f", "#b07aa1", "#9c755f", "#76b7b2", "#edc948", "#bab0ac", "#ff9da7"};

    private final History history;
    /** The time shown, in nanoseconds since the run's origin. */
    private final long from;
    private final long to;
    private final StringBuilder svg = new StringBuilder();

    private Timeline(History history, long from, long to) {
        this.history = history;
        this.from = from;
        this.to = to;
    }

    /** The whole run, from the first operation on: the violations, and the negative control's stale writes. */
    static String overview(History history, Findings findings, Findings control) {
        long first = history.ops().stream().mapToLong(Op::start).min().orElse(0);
        return new Timeline(history, Math.min(first, history.nemesisStart()), history.end()).drawOverview(findings, control);
    }

    /**
     * Operations on {@code violation}'s name from {@code from} to {@code to} (nanoseconds since the
     * origin), with their accesses to one twin of the resource ({@code unfenced}: the negative control's).
     */
    static String closeUp(History history, Violation violation, boolean unfenced, long from, long to) {
        return new Timeline(history, from, to).drawCloseUp(violation, unfenced);
    }

    private String drawOverview(Findings findings, Findings control) {
        List<String> clients = history.quiescence().stream().map(History.Quiescence::client).sorted().toList();
        List<String> hotNames = history.ops().stream().map(Op::name).filter(name -> name.startsWith("hot-"))
                .collect(java.util.stream.Collectors.toCollection(TreeSet::new)).stream().toList();
        int rows = FaultKind.values().length - 1 + clients.size() + hotNames.size() + 7;
        int height = 40 + rows * ROW + 90;
        open(height, "nemesis run; dashed: faults start, faults end (all healed), clients idle; red: violations;"
                + " purple: stale writes the unfenced twin (negative control) accepted");
        axis(30, height - 20);
        for (long mark : new long[] {history.nemesisStart(), history.nemesisEnd(), history.quiescent()}) {
            svg.append(String.format(Locale.ROOT,
                    "<line x1='%.1f' y1='30' x2='%.1f' y2='%d' stroke='#333' stroke-dasharray='3 3'/>%n", x(mark), x(mark),
                    height - 20));
        }
        int y = 40;
        y = label(y, "faults", true);
        for (FaultKind kind : FaultKind.values()) {
            if (kind == FaultKind.CLIENT_PAUSE) {
                continue;
            }
            faultRow(y, kind.label(), history.faults().stream().filter(f -> f.kind() == kind).toList(), "#e15759");
            y += ROW;
        }
        for (String client : clients) {
            faultRow(y, client + " frozen", history.faults().stream()
                    .filter(f -> f.kind() == FaultKind.CLIENT_PAUSE && f.target().equals(client)).toList(), colour(client));
            y += ROW;
        }
        y = label(y + 4, "holders of the hot names (colour: client; orange: more than one inside)", true);
        for (String name : hotNames) {
            holders(y, name);
            y += ROW;
        }
        y = label(y + 4, "operations ended per column: ok, lease lost, acquire failed, cancelled", true);
        outcomes(y);
        y += 4 * ROW;
        for (Violation stale : control.of(Checker.Kind.STALE_WRITE)) {
            double x = x(stale.at());
            svg.append(String.format(Locale.ROOT, "<path d='M%.1f %d l5 9 l-10 0 z' fill='#8e44ad'><title>%s</title></path>%n",
                    x, y + 2, escape("negative control: " + stale.what() + " (" + stale.cause() + ")")));
        }
        y += ROW;
        int number = 1;
        for (Violation violation : findings.violations()) {
            double x = x(violation.at());
            svg.append(String.format(Locale.ROOT, "<line x1='%.1f' y1='40' x2='%.1f' y2='%d' stroke='#d00' stroke-width='1'>"
                    + "<title>%s</title></line>%n", x, x, y, escape(number + ". " + violation.kind() + " " + violation.what())));
            if (number <= 50) {
                text(x + 2, y + 12, String.valueOf(number), "#d00", 10);
            }
            number++;
        }
        return close();
    }

    private String drawCloseUp(Violation violation, boolean unfenced) {
        List<Op> ops = history.ops().stream()
                .filter(op -> op.name().equals(violation.name()))
                .filter(op -> op.start() <= to && (op.end() < 0 || op.end() >= from))
                .sorted(Comparator.comparingLong(Op::start))
                .toList();
        List<Fault> faults = history.faults().stream().filter(f -> f.start() <= to && f.end() >= from).toList();
        Map<String, List<Access>> accesses = new HashMap<>();
        Set<String> ids = new java.util.HashSet<>();
        ops.forEach(op -> ids.add(op.id()));
        for (Access access : history.accesses()) {
            if (ids.contains(access.op()) && access.fenced() != unfenced) {
                accesses.computeIfAbsent(access.op(), id -> new ArrayList<>()).add(access);
            }
        }
        int height = 60 + (faults.size() + ops.size()) * ROW + 60;
        open(height, (unfenced ? "negative control (unfenced twin): " : "") + violation.kind() + " on " + violation.name() + ": "
                + violation.what());
        axis(30, height - 20);
        int y = 40;
        for (Fault fault : faults) {
            boolean freeze = fault.kind() == FaultKind.CLIENT_PAUSE;
            faultRow(y, fault.kind().label() + (freeze ? " " + fault.target() : ""), List.of(fault),
                    freeze ? colour(fault.target()) : "#e15759");
            y += ROW;
        }
        y += 6;
        for (Op op : ops) {
            boolean involved = violation.ops().contains(op.id());
            text(4, y + 11, op.id() + (op.entered() ? " fence ..." + op.fence() % 100_000_000 : ""), involved ? "#d00" : "#333",
                    10);
            double start = x(op.start());
            double gaveUp = x(op.acquiredOrGaveUp() < 0 ? to : op.acquiredOrGaveUp());
            svg.append(String.format(Locale.ROOT, "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#aaa'/>%n",
                    start, y + 8, gaveUp, y + 8));
            if (op.entered()) {
                long exit = op.exit() < 0 ? to : op.exit();
                long validEnd = Math.min(exit, op.validUntil() < 0 ? exit : op.validUntil());
                rect(x(op.enter()), y + 2, x(validEnd), 12, colour(op.client()),
                        op.id() + " " + op.outcome() + " fence " + op.fence());
                if (exit > validEnd) {
                    rect(x(validEnd), y + 2, x(exit), 12, "#f4a3a3", op.id() + " body after its lease ended");
                }
            }
            for (Access access : accesses.getOrDefault(op.id(), List.of())) {
                long at = access.write() ? op.writeSent() : op.readAt();
                if (at >= 0) {
                    double ax = x(at);
                    svg.append(String.format(Locale.ROOT, "<path d='M%.1f %d l4 7 l-8 0 z' fill='%s'><title>%s</title></path>%n",
                            ax, y + 1,
                            access.accepted() ? (access.stale() ? "#d00" : "#222") : "#fff",
                            escape((access.write() ? "write " : "read ") + (access.accepted() ? "accepted" : "refused")
                                    + " fence " + access.fence() + " seen " + access.seenBefore())));
                }
            }
            y += ROW;
        }
        double vx = x(violation.at());
        svg.append(String.format(Locale.ROOT,
                "<line x1='%.1f' y1='30' x2='%.1f' y2='%d' stroke='#d00' stroke-dasharray='4 2'/>%n", vx, vx, y));
        text(LEFT, y + 16, "grey line: waiting; bar: body while its lease was valid (colour: client); pink: body after its lease"
                + " ended; triangles: resource accesses (black accepted, red stale but accepted, white refused)", "#333", 10);
        return close();
    }

    private void holders(int y, String name) {
        String[] colours = new String[WIDTH];
        List<Op> bodies = history.ops().stream().filter(op -> op.name().equals(name) && op.entered())
                .sorted(Comparator.comparingLong(Op::enter)).toList();
        for (Op op : bodies) {
            paint(colours, op.enter(), op.exit() < 0 ? to : op.exit(), colour(op.client()));
        }
        // Then the stretches where two bodies were inside at once.
        List<Op> inside = new ArrayList<>();
        for (Op b : bodies) {
            inside.removeIf(a -> a.exit() >= 0 && a.exit() <= b.enter());
            for (Op a : inside) {
                long until = Math.min(a.exit() < 0 ? to : a.exit(), b.exit() < 0 ? to : b.exit());
                paint(colours, b.enter(), until, "#f28e2b");
            }
            inside.add(b);
        }
        text(4, y + 11, name, "#333", 11);
        int c = 0;
        while (c < WIDTH) {
            int run = c;
            while (run + 1 < WIDTH && java.util.Objects.equals(colours[c], colours[run + 1])) {
                run++;
            }
            if (colours[c] != null) {
                rect(LEFT + c, y + 2, LEFT + run + 1, 12, colours[c], null);
            }
            c = run + 1;
        }
    }

    private void paint(String[] columns, long start, long end, String colour) {
        int a = (int) x(start) - LEFT;
        int b = (int) x(end) - LEFT;
        for (int c = Math.max(0, a); c <= Math.min(WIDTH - 1, b); c++) {
            columns[c] = colour;
        }
    }

    private void outcomes(int y) {
        int buckets = WIDTH / 4;
        int[][] counts = new int[buckets][4];
        for (Op op : history.ops()) {
            if (op.end() < from) {
                continue;
            }
            int b = Math.min(buckets - 1, (int) ((double) (op.end() - from) / (to - from) * buckets));
            String outcome = op.outcome();
            int kind = outcome.equals("ok") ? 0 : outcome.equals("lost") || outcome.equals("max-lease-time") ? 1
                    : outcome.startsWith("acquire-") ? 2 : 3;
            counts[b][kind]++;
        }
        int max = 1;
        for (int[] bucket : counts) {
            max = Math.max(max, bucket[0] + bucket[1] + bucket[2] + bucket[3]);
        }
        String[] colours = {"#59a14f", "#f28e2b", "#9d9d9d", "#4e79a7"};
        double height = 4 * ROW - 4;
        for (int b = 0; b < buckets; b++) {
            double base = y + height;
            for (int k = 0; k < 4; k++) {
                double h = counts[b][k] * height / max;
                if (h > 0) {
                    rect(LEFT + b * 4, base - h, LEFT + b * 4 + 4, h, colours[k], null);
                }
                base -= h;
            }
        }
        text(4, y + 11, "max " + max + " per " + String.format(Locale.ROOT, "%.1f s", (to - from) / 1e9 / buckets), "#333", 10);
    }

    private void faultRow(int y, String label, List<Fault> faults, String colour) {
        text(4, y + 11, label, "#333", 11);
        for (Fault fault : faults) {
            double a = x(fault.start());
            double b = Math.max(a + 1.5, x(fault.end()));
            rect(a, y + 2, b, 12, colour, fault.kind().label() + " " + fault.target() + " "
                    + String.format(Locale.ROOT, "%.3f-%.3f s ", fault.start() / 1e9, fault.end() / 1e9) + fault.detail());
        }
    }

    private int label(int y, String text, boolean bold) {
        svg.append(String.format(Locale.ROOT, "<text x='4' y='%d' font-size='11' font-weight='%s' fill='#000'>%s</text>%n",
                y + 11, bold ? "bold" : "normal", escape(text)));
        return y + ROW;
    }

    private void axis(int top, int bottom) {
        double span = (to - from) / 1e9;
        double step = span <= 10 ? 1 : span <= 30 ? 2 : span <= 60 ? 5 : span <= 300 ? 30 : span <= 900 ? 60 : 300;
        for (double s = Math.ceil(from / 1e9 / step) * step; s <= to / 1e9; s += step) {
            double x = x((long) (s * 1e9));
            svg.append(String.format(Locale.ROOT, "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#eee'/>%n", x, top, x,
                    bottom));
            text(x - 8, top - 4, String.format(Locale.ROOT, "%.0f s", s), "#666", 10);
        }
    }

    /** The x of a time, kept within the chart. */
    private double x(long at) {
        long within = Math.max(from, Math.min(to, at));
        return LEFT + (double) (within - from) / Math.max(1, to - from) * WIDTH;
    }

    private void open(int height, String title) {
        svg.append(String.format(Locale.ROOT,
                "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-family='sans-serif'>%n", LEFT + WIDTH + 20,
                height));
        svg.append("<rect width='100%' height='100%' fill='#fff'/>\n");
        text(4, 14, title, "#000", 12);
    }

    private String close() {
        return svg.append("</svg>\n").toString();
    }

    private void rect(double x1, double y, double x2, double height, String fill, String title) {
        svg.append(String.format(Locale.ROOT, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='%s'>%s</rect>%n",
                x1, y, Math.max(1, x2 - x1), height, fill, title == null ? "" : "<title>" + escape(title) + "</title>"));
    }

    private void text(double x, double y, String text, String fill, int size) {
        svg.append(String.format(Locale.ROOT, "<text x='%.1f' y='%.1f' font-size='%d' fill='%s'>%s</text>%n", x, y, size, fill,
                escape(text)));
    }

    private static String colour(String client) {
        int index = Integer.parseInt(client.substring(1));
        return CLIENT_COLOURS[index % CLIENT_COLOURS.length];
    }

    private static String escape(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("'", "&apos;");
    }
}
