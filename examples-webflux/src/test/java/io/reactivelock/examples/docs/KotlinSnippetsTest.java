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
            if (!code.isEmpty() && !contains(source, code)) {
                missing.add(block.where() + ": not in " + SOURCE.getFileName() + " as written (from \"" + code.get(0).strip() + "\")");
            }
        }
        return missing;
    }

    /** Whether {@code code} appears in {@code source} on consecutive lines, indented alike by some constant. */
    private static boolean contains(List<String> source, List<String> code) {
        for (int start = 0; start + code.size() <= source.size(); start++) {
            String first = source.get(start).stripTrailing();
            if (!first.endsWith(code.get(0).strip()) || !first.strip().equals(code.get(0).strip())) {
                continue;
            }
            int indent = leading(first) - leading(code.get(0));
            if (indent < 0) {
                continue;
            }
            String pad = " ".repeat(indent);
            boolean all = true;
            for (int i = 0; i < code.size() && all; i++) {
                String expected = code.get(i).isBlank() ? "" : pad + code.get(i);
                all = source.get(start + i).stripTrailing().equals(expected);
            }
            if (all) {
                return true;
            }
        }
        return false;
    }

    private static int leading(String line) {
        return line.length() - line.stripLeading().length();
    }
}
