package io.reactivelock.examples.docs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The pages users read (README.md and every Markdown page under docs/) and their fenced code blocks,
 * each with the page and the line it starts on, so that a failing check can say where to look.
 */
final class DocPages {

    /** One fenced block: its language (the word after the opening fence), its lines, where it is. */
    record Block(String language, Path page, int firstLine, List<String> lines) {

        String text() {
            return String.join("\n", lines) + "\n";
        }

        /** {@code docs/lock.md:42}: the page, relative to the repository, and the block's first line. */
        String where() {
            return repository().relativize(page) + ":" + firstLine;
        }
    }

    private DocPages() {}

    /** The repository's root: the example module's parent, which Surefire runs the tests in. */
    static Path repository() {
        Path here = Path.of(System.getProperty("basedir", "")).toAbsolutePath();
        Path root = here.getFileName() != null && here.getFileName().toString().equals("examples-webflux") ? here.getParent() : here;
        if (!Files.isRegularFile(root.resolve("README.md")) || !Files.isDirectory(root.resolve("docs"))) {
            throw new IllegalStateException("not the repository's root (no README.md and docs/): " + root);
        }
        return root;
    }

    /** README.md, then every {@code .md} file under docs/, in path order. */
    static List<Path> pages() {
        Path root = repository();
        List<Path> pages = new ArrayList<>();
        pages.add(root.resolve("README.md"));
        try (Stream<Path> docs = Files.walk(root.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return pages;
    }

    /** Every fenced block of every page whose language is one of {@code languages}. */
    static List<Block> blocks(String... languages) {
        List<Block> blocks = new ArrayList<>();
        for (Path page : pages()) {
            blocks.addAll(blocks(page, List.of(languages)));
        }
        return blocks;
    }

    /**
     * The fenced blocks of one page. A fence may be indented (a block inside a list item): the
     * block's lines lose that indentation.
     */
    static List<Block> blocks(Path page, List<String> languages) {
        List<String> lines;
        try {
            lines = Files.readAllLines(page);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<Block> blocks = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            String trimmed = line.stripLeading();
            if (!trimmed.startsWith("```")) {
                continue;
            }
            int indent = line.length() - trimmed.length();
            String language = trimmed.substring(3).strip();
            int start = i + 1;
            int end = start;
            while (end < lines.size() && !lines.get(end).strip().equals("```")) {
                end++;
            }
            if (end == lines.size()) {
                throw new IllegalStateException(page + ":" + (i + 1) + ": a code fence that is never closed");
            }
            if (languages.contains(language)) {
                List<String> body = new ArrayList<>();
                for (String l : lines.subList(start, end)) {
                    body.add(l.length() >= indent && l.substring(0, indent).isBlank() ? l.substring(indent) : l.stripLeading());
                }
                blocks.add(new Block(language, page, start + 1, body));
            }
            i = end;
        }
        return blocks;
    }
}
