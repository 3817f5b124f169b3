package io.reactivelock.examples.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * docs/logging.md lists every line the library logs: each {@code log.warn/info/error/debug("...")}
 * call in the main sources of reactive-lock and its modules appears in the page's table, with its
 * logger's class and level, so a new log line, or one whose level or wording changed, fails the build
 * until the page says so.
 */
class LoggingPageTest {

    /** A log call in code (not in a comment): the level, then the message's first string literal. */
    private static final Pattern CALL = Pattern.compile("^(?!\\s*(?:\\*|//))[^\\n]*?\\blog\\.(trace|debug|info|warn|error)\\(\\s*\"([^\"]*)\"",
            Pattern.MULTILINE);

    @Test
    void everyLogLineOfTheLibraryIsOnTheLoggingPage() throws IOException {
        Path root = DocPages.repository();
        String page = Files.readString(root.resolve("docs/logging.md"));
        List<String> calls = new ArrayList<>();
        List<String> missing = new ArrayList<>();
        try (Stream<Path> sources = Files.walk(root.resolve("reactive-lock"))) {
            List<Path> mainSources = sources
                    .filter(p -> p.toString().endsWith(".java") && p.toString().contains("/src/main/")).toList();
            for (Path source : mainSources) {
                Matcher m = CALL.matcher(Files.readString(source));
                while (m.find()) {
                    String level = m.group(1).toUpperCase(Locale.ROOT);
                    String message = m.group(2);
                    // The page names each placeholder ({name}, {holder}...): every fixed part must be in the row.
                    List<String> parts = Stream.of(message.split("\\{}")).map(String::strip)
                            .filter(x -> !x.isEmpty()).toList();
                    calls.add(level + " " + message);
                    boolean listed = page.lines().anyMatch(row -> row.startsWith("|") && row.contains(level)
                            && parts.stream().allMatch(row::contains));
                    if (!listed) {
                        missing.add(root.relativize(source) + ": " + level + " \"" + message + "...\"");
                    }
                }
            }
        }
        assertThat(calls).as("log calls found in the library's main sources").hasSizeGreaterThanOrEqualTo(6);
        assertThat(missing).as("log lines not in docs/logging.md's table (a row with the message and the level)").isEmpty();
    }
}
