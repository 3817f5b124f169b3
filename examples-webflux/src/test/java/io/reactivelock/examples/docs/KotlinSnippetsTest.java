package io.reactivelock.examples.docs;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.examples.docs.DocPages.Block;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Every {@code ```kotlin} block of README.md and docs/ is compiled by the build: it must appear, line
 * for line, in {@link #SOURCE}, a test source of reactive-lock-kotlin that the Kotlin module compiles
 * (against the library, with {@code -Werror}). A block's {@code import} lines must be among that
 * file's imports. Indentation may differ by a constant (the file nests the blocks in a class), and
 * trailing spaces do not count.
 */
class KotlinSnippetsTest {

    static final Path SOURCE = Path.of("reactive-lock/kotlin/src/test/kotlin/io/reactivelock/kotlin/docs/DocSnippets.kt");

    @Test
    void everyKotlinBlockIsInTheCompiledSnippets() throws IOException {
        List<Block> blocks = DocPages.blocks("kotlin");
        assertThat(blocks).as("kotlin blocks in README.md and docs/").isNotEmpty();
        List<String> source = Files.readAllLines(DocPages.repository().resolve(SOURCE));
        assertThat(missing(blocks, source)).as("kotlin blocks not found, as written, in " + SOURCE).isEmpty();
    }

    /** For each block not found in {@code source}: where it is and its first line that is not. */
    static List<String> missing(List<Block> blocks, List<String> source) {
        List<String> imports = source.stream().filter(l -> l.startsWith("import ")).map(String::strip).toList();
        List<String> missing = new ArrayList<>();
        for (Block block : blocks) {
            List<String> code = new ArrayList<>();
            for (String line : block.lines()) {
                if (line.startsWith("import ")) {
                    if (!imports.contains(line.strip())) {
                        missing.add(block.where() + ": import not in " + SOURCE.getFileName() + ": " + line.strip());
                    }
                } else {
                    code.add(line.stripTrailing());
                }
            }
            while (!code.isEmpty() && code.get(0).isBlank()) {
                code.remove(0);
            }
            int matched = code.isEmpty() ? 0 : longestMatch(source, code);
            if (matched < code.size()) {
                int line = block.firstLine() + block.lines().indexOf(code.get(matched));
                missing.add(block.where() + ": not in " + SOURCE.getFileName() + " as written; "
                        + (matched == 0 ? "no line there starts it" : "line " + line + " differs")
                        + ": \"" + code.get(matched).strip() + "\"");
            }
        }
        return missing;
    }

    /**
     * How many of the lines of {@code code}, from its first, appear in {@code source} on consecutive
     * lines, indented alike by some constant: {@code code.size()} when all of them do.
     */
    private static int longestMatch(List<String> source, List<String> code) {
        int best = 0;
        for (int start = 0; start < source.size(); start++) {
            String first = source.get(start).stripTrailing();
            if (!first.strip().equals(code.get(0).strip())) {
                continue;
            }
            int indent = leading(first) - leading(code.get(0));
            if (indent < 0) {
                continue;
            }
            String pad = " ".repeat(indent);
            int i = 0;
            while (i < code.size() && start + i < source.size()
                    && source.get(start + i).stripTrailing().equals(code.get(i).isBlank() ? "" : pad + code.get(i))) {
                i++;
            }
            best = Math.max(best, i);
        }
        return best;
    }

    private static int leading(String line) {
        return line.length() - line.stripLeading().length();
    }
}
