package io.reactivelock.examples.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The documentation can be navigated: every page under docs/ is linked from the index of its folder
 * (docs/README.md; docs/archive/README.md, the older benchmark runs, whose index the benchmarks page
 * links so that the user guide's index need not), every relative link of README.md and docs/ leads to a file that exists and, when
 * it names a heading ({@code page.md#heading}), to a heading of that page, and no page outgrows what a
 * reader takes in at once (README.md at most 15 KB, a page at most 25 KB).
 */
class DocLinksTest {

    private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");

    @Test
    void theIndexLinksEveryPage() throws IOException {
        Path docs = DocPages.repository().resolve("docs");
        List<String> unlinked = new ArrayList<>();
        for (Path page : DocPages.pages()) {
            if (!page.startsWith(docs) || page.equals(docs.resolve("README.md"))) {
                continue;
            }
            Path folder = page.getParent();
            if (page.getFileName().toString().equals("README.md")) {
                // A folder's own index (docs/archive/README.md) is linked from a page of the folder above.
                String link = "](" + folder.getParent().relativize(page) + ")";
                boolean linked = false;
                try (Stream<Path> pages = Files.list(folder.getParent())) {
                    for (Path above : (Iterable<Path>) pages.filter(p -> p.toString().endsWith(".md"))::iterator) {
                        linked |= Files.readString(above).contains(link);
                    }
                }
                if (!linked) {
                    unlinked.add(docs.relativize(page) + " (from no page of " + docs.getParent().relativize(folder.getParent()) + "/)");
                }
            } else if (!Files.readString(folder.resolve("README.md")).contains("](" + folder.relativize(page) + ")")) {
                unlinked.add(docs.relativize(page) + " (from " + docs.getParent().relativize(folder.resolve("README.md")) + ")");
            }
        }
        assertThat(unlinked).as("pages under docs/ that the index of their folder does not link").isEmpty();
    }

    @Test
    void everyRelativeLinkLeadsToAFileAndItsHeading() throws IOException {
        List<String> broken = new ArrayList<>();
        int links = 0;
        for (Path page : DocPages.pages()) {
            Matcher m = LINK.matcher(withoutCode(Files.readString(page)));
            while (m.find()) {
                String target = m.group(1);
                if (target.matches("^[a-z]+:.*")) {
                    continue; // https:, mailto:
                }
                links++;
                int hash = target.indexOf('#');
                String file = hash < 0 ? target : target.substring(0, hash);
                Path resolved = file.isEmpty() ? page : page.getParent().resolve(file).normalize();
                String where = DocPages.repository().relativize(page) + ": (" + target + ")";
                if (!Files.exists(resolved)) {
                    broken.add(where + ": no such file");
                } else if (hash >= 0 && !anchors(resolved).contains(target.substring(hash + 1))) {
                    broken.add(where + ": no such heading in " + DocPages.repository().relativize(resolved));
                }
            }
        }
        assertThat(links).as("relative links in README.md and docs/").isGreaterThan(50);
        assertThat(broken).as("links that lead nowhere").isEmpty();
    }

    @Test
    void noPageIsTooLongToRead() throws IOException {
        List<String> tooLong = new ArrayList<>();
        for (Path page : DocPages.pages()) {
            long size = Files.size(page);
            boolean readme = page.equals(DocPages.repository().resolve("README.md"));
            if (size > (readme ? 15_000 : 25_000)) {
                tooLong.add(DocPages.repository().relativize(page) + ": " + size + " bytes");
            }
        }
        assertThat(tooLong).as("pages over 15 KB (README.md) or 25 KB (docs/)").isEmpty();
    }

    /** The anchors GitHub makes of a Markdown file's headings: lower case, punctuation dropped, spaces as hyphens. */
    private static Set<String> anchors(Path file) throws IOException {
        Set<String> anchors = new HashSet<>();
        if (!file.toString().endsWith(".md")) {
            return anchors;
        }
        for (String line : withoutCode(Files.readString(file)).lines().toList()) {
            if (line.startsWith("#")) {
                String heading = line.replaceFirst("^#+\\s*", "").strip().toLowerCase(Locale.ROOT);
                anchors.add(heading.replaceAll("[^\\p{L}\\p{N} _-]", "").replace(' ', '-'));
            }
        }
        return anchors;
    }

    /** The text without its fenced code blocks, whose lines are neither headings nor links. */
    private static String withoutCode(String markdown) {
        StringBuilder out = new StringBuilder();
        boolean code = false;
        for (String line : markdown.lines().toList()) {
            if (line.stripLeading().startsWith("```")) {
                code = !code;
                out.append('\n');
                continue;
            }
            out.append(code ? "" : line).append('\n');
        }
        return out.toString();
    }
}
