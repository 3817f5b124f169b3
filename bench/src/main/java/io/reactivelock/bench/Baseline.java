package io.reactivelock.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * The headline figures of a run as CSV ({@code results.csv}), and reading them back as the
 * "before" of a before/after comparison ({@code -Dbench.baseline=path/to/results.csv}).
 */
final class Baseline {

    /** The compared figures, in CSV column order; p50/p99 are of the pair (U cells) or the wait (C cells). */
    static final List<String> FIGURES = List.of("ops/s", "p50 µs", "p99 µs", "CPU µs/op", "Redis cmds/op",
            "round trips/op");

    private static final List<ToDoubleFunction<CellResult>> GETTERS = List.of(
            CellResult::opsPerSecond,
            c -> c.micros(c.headline(), 50),
            c -> c.micros(c.headline(), 99),
            CellResult::cpuMicrosPerOp,
            CellResult::commandsPerOp,
            CellResult::roundTripsPerOp);

    private Baseline() {}

    static String csv(Settings settings, Map<String, CellResult> cells) {
        StringBuilder csv = new StringBuilder("scenario,contender,").append(String.join(",", FIGURES)).append('\n');
        for (Scenario scenario : settings.scenarios) {
            for (String id : settings.contenders) {
                CellResult c = cells.get(scenario + "/" + id);
                if (c == null) {
                    continue; // a contender without this primitive
                }
                csv.append(scenario).append(',').append(id);
                for (double value : figures(c)) {
                    csv.append(',').append(String.format(Locale.ROOT, "%.3f", value));
                }
                csv.append('\n');
            }
        }
        return csv.toString();
    }

    static double[] figures(CellResult c) {
        double[] values = new double[GETTERS.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = GETTERS.get(i).applyAsDouble(c);
        }
        return values;
    }

    /** The figures of a {@code results.csv}, by "scenario/contender id". */
    static Map<String, double[]> read(Path file) throws IOException {
        Map<String, double[]> rows = new LinkedHashMap<>();
        List<String> lines = Files.readAllLines(file);
        for (String line : lines.subList(1, lines.size())) {
            String[] parts = line.split(",");
            double[] values = new double[parts.length - 2];
            for (int i = 0; i < values.length; i++) {
                values[i] = Double.parseDouble(parts[i + 2]);
            }
            rows.put(parts[0] + "/" + parts[1], values);
        }
        return rows;
    }
}
