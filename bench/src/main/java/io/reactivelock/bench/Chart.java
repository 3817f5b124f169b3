package io.reactivelock.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The run as an SVG chart ({@code results.svg}): one row per cell, throughput on the left and p99
 * on the right, one horizontal bar per contender with its value written next to it. Written by
 * hand (SVG is text), on a white background so it reads the same in light and dark pages.
 */
final class Chart {

    private static final int LABEL_WIDTH = 230;
    private static final int PANEL_WIDTH = 330;
    private static final int VALUE_ROOM = 80;
    private static final int GAP = 30;
    private static final int BAR = 14;
    private static final int BAR_STEP = 19;
    private static final int ROW_TITLE = 46;
    private static final int ROW_GAP = 18;
    private static final int TOP = 72;
    private static final int WIDTH = LABEL_WIDTH + 2 * (PANEL_WIDTH + VALUE_ROOM) + GAP + 10;

    /** Colours by contender id: this library in blues, the others in distinct hues, the floor in grey. */
    private static final Map<String, String> COLOURS = Map.of("ours", "#1f5fa8", "ours-fair", "#5b9bd5",
            "redisson", "#c8553d", "redisson-fair", "#e39b86", "spring-spin", "#3f8f4f", "spring-pubsub", "#8cc084",
            "raw", "#7f7f7f");

    /** Labels short enough for the chart's left column. */
    private static final Map<String, String> LABELS = Map.of("ours", "reactive-lock", "ours-fair", "reactive-lock fair",
            "redisson", "Redisson RLockReactive",
            "redisson-fair", "Redisson fair lock", "spring-spin",
            "Spring registry, spin", "spring-pubsub", "Spring registry, pub/sub", "raw", "raw floor (SET NX + EVALSHA)");

    private Chart() {}

    /** The chart of {@code cells}, with {@code caption} (when, where) under its title. */
    static String svg(Settings settings, Map<String, CellResult> cells, String caption) {
        int height = TOP + 10;
        for (Scenario scenario : settings.scenarios) {
            height += rowHeight(ran(settings, cells, scenario).size());
        }
        StringBuilder svg = new StringBuilder();
        svg.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\""
                + " viewBox=\"0 0 %d %d\" font-family=\"system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif\""
                + " font-size=\"12\" role=\"img\" aria-labelledby=\"title desc\">%n", WIDTH, height, WIDTH, height));
        svg.append("<title id=\"title\">reactive-lock benchmark: throughput and p99 per contender and cell</title>\n");
        svg.append("<desc id=\"desc\">").append(escape(description(settings, cells))).append("</desc>\n");
        svg.append(String.format(Locale.ROOT, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>%n", WIDTH, height));
        svg.append(text(10, 22, "start", "font-size=\"16\" font-weight=\"bold\"",
                "reactive-lock benchmark: throughput (higher is better) and p99 (lower is better)"));
        svg.append(text(10, 40, "start", "fill=\"#555555\"",
                "U cells: acquire+release pairs, p99 of the pair. C cells: 16 contending workers, p99 of the wait to acquire."));
        svg.append(text(10, 56, "start", "fill=\"#555555\"", caption));
        int y = TOP;
        for (Scenario scenario : settings.scenarios) {
            List<String> ids = ran(settings, cells, scenario);
            List<CellResult> row = new ArrayList<>();
            for (String id : ids) {
                row.add(cells.get(scenario + "/" + id));
            }
            row(svg, scenario, ids, row, y);
            y += rowHeight(ids.size());
        }
        svg.append("</svg>\n");
        return svg.toString();
    }

    /** The contenders that took part in {@code scenario} (a primitive's cells have two). */
    private static List<String> ran(Settings settings, Map<String, CellResult> cells, Scenario scenario) {
        return settings.contenders.stream().filter(id -> cells.containsKey(scenario + "/" + id)).toList();
    }

    private static int rowHeight(int bars) {
        return ROW_TITLE + bars * BAR_STEP + ROW_GAP;
    }

    private static void row(StringBuilder svg, Scenario scenario, List<String> ids, List<CellResult> row, int y) {
        svg.append(String.format(Locale.ROOT, "<text x=\"10\" y=\"%d\"><tspan font-size=\"14\" font-weight=\"bold\">%s</tspan>"
                + "<tspan dx=\"8\" fill=\"#555555\">(%s)</tspan></text>%n", y + 16, escape(scenario + ": " + scenario.measures),
                escape(scenario.shape())));
        int panelA = LABEL_WIDTH;
        int panelB = LABEL_WIDTH + PANEL_WIDTH + VALUE_ROOM + GAP;
        boolean contended = scenario.contended;
        svg.append(text(panelA, y + 38, "start", "fill=\"#555555\"", scenario.unit()));
        svg.append(text(panelB, y + 38, "start", "fill=\"#555555\"", contended ? "p99 wait, ms" : "p99 of the pair, µs"));
        double[] rates = new double[row.size()];
        double[] p99s = new double[row.size()];
        for (int i = 0; i < row.size(); i++) {
            CellResult c = row.get(i);
            boolean measured = c != null && c.ops > 0;
            rates[i] = c != null ? c.opsPerSecond() : Double.NaN; // a cell that ran shows its rate, even 0
            p99s[i] = measured ? c.micros(c.headline(), 99) / (contended ? 1e3 : 1) : Double.NaN;
        }
        int barsTop = y + ROW_TITLE;
        for (int i = 0; i < row.size(); i++) {
            int barY = barsTop + i * BAR_STEP;
            boolean ours = ids.get(i).startsWith("ours");
            svg.append(text(LABEL_WIDTH - 8, barY + BAR - 3, "end", ours ? "font-weight=\"bold\"" : "",
                    scenario.primitive() ? Primitives.label(ids.get(i)) : LABELS.getOrDefault(ids.get(i), ids.get(i))));
            String colour = COLOURS.getOrDefault(ids.get(i), "#999999");
            bar(svg, panelA, barY, rates[i], max(rates), colour, "%,.0f");
            bar(svg, panelB, barY, p99s[i], max(p99s), colour, contended ? "%,.1f" : "%,.0f");
        }
        int axisBottom = barsTop + row.size() * BAR_STEP - (BAR_STEP - BAR);
        for (int x : new int[] {panelA, panelB}) {
            svg.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333333\"/>%n",
                    x, barsTop - 3, x, axisBottom + 3));
        }
    }

    private static void bar(StringBuilder svg, int x, int y, double value, double max, String colour, String format) {
        if (Double.isNaN(value)) {
            svg.append(text(x + 6, y + BAR - 3, "start", "fill=\"#999999\"", "not measured"));
            return;
        }
        double width = max > 0 ? Math.max(1, value / max * PANEL_WIDTH) : 1;
        svg.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\">"
                + "<title>%s</title></rect>%n", x, y, width, BAR, colour, String.format(Locale.ROOT, format, value)));
        svg.append(text((int) Math.round(x + width + 5), y + BAR - 3, "start", "", String.format(Locale.ROOT, format, value)));
    }

    private static double max(double[] values) {
        double max = 0;
        for (double v : values) {
            if (!Double.isNaN(v)) {
                max = Math.max(max, v);
            }
        }
        return max;
    }

    /** The chart's figures as a sentence for screen readers. */
    private static String description(Settings settings, Map<String, CellResult> cells) {
        StringBuilder desc = new StringBuilder();
        for (Scenario scenario : settings.scenarios) {
            desc.append(scenario).append(" (").append(scenario.measures).append("): ");
            List<String> parts = new ArrayList<>();
            for (String id : settings.contenders) {
                CellResult c = cells.get(scenario + "/" + id);
                if (c != null && c.ops > 0) {
                    parts.add(String.format(Locale.ROOT, "%s %,.0f per second, p99 %,.0f µs", c.contender,
                            c.opsPerSecond(), c.micros(c.headline(), 99)));
                }
            }
            desc.append(String.join("; ", parts)).append(". ");
        }
        return desc.toString().trim();
    }

    private static String text(int x, int y, String anchor, String attributes, String content) {
        return String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"%s\"%s>%s</text>%n", x, y, anchor,
                attributes.isEmpty() ? "" : " " + attributes, escape(content));
    }

    private static String escape(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
