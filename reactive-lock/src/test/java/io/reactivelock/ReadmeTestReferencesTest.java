package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.support.TestSources;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every page of the documentation (README.md and each Markdown page under docs/) names the tests that
 * show its claims, as {@code `faults.SomeTest`}, {@code `SomeTest.methodPrefix…`},
 * {@code `SomeTest`'s `methodPrefix…`} (a published contract, {@code SomeContract}, likewise), or a
 * bare method: {@code `methodPrefix…`}, or a name of five words or more such as
 * {@code `aDeadReaderStopsKeepingWriters`} (shorter ones without {@code …} are API names): every one
 * of them must exist, so that a renamed or removed test cannot leave a claim pointing at nothing,
 * wherever the claim is. A bare method may be declared by any test or contract.
 */
class ReadmeTestReferencesTest {

    private static final List<Path> ROOTS = TestSources.roots();
    private static final Pattern REFERENCE = Pattern.compile(
            "`((?:\\w+\\.)?[A-Z]\\w*(?:Test|Contract))(?:\\.(\\w+)…?)?`(?:'s `(\\w+)…?`)?");
    /** A bare method: not after a dot or a class's {@code 's}; a test's if it ends with {@code …} or has five words or more. */
    private static final Pattern BARE_METHOD = Pattern.compile("(?<![\\w.`])(?<!'s )`([a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+)(…)?`");

    @Test
    void everyTestTheDocsNameExists() throws IOException {
        Path repository = TestSources.repository();
        List<Path> pages = new ArrayList<>(List.of(repository.resolve("README.md")));
        try (Stream<Path> docs = Files.walk(repository.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
        }
        assertThat(pages).as("the pages that name tests").contains(repository.resolve("docs/guarantees.md"),
                repository.resolve("docs/spring-boot.md"), repository.resolve("docs/lock.md"));
        List<String> missing = new ArrayList<>();
        int references = 0;
        for (Path page : pages) {
            String where = repository.relativize(page) + ": ";
            Matcher m = REFERENCE.matcher(Files.readString(page));
            while (m.find()) {
                references++;
                Path source = find(m.group(1));
                if (source == null) {
                    missing.add(where + m.group() + ": no such test class");
                    continue;
                }
                String method = m.group(2) != null ? m.group(2) : m.group(3);
                if (method != null && !declares(source, method)) {
                    missing.add(where + m.group() + ": no test method starting with " + method + " in " + source
                            + " or what it extends");
                }
            }
        }
        int bare = 0;
        for (Path page : pages) {
            Matcher m = BARE_METHOD.matcher(Files.readString(page));
            while (m.find()) {
                String method = m.group(1);
                if (m.group(2) == null && method.chars().filter(Character::isUpperCase).count() < 4) {
                    continue;
                }
                bare++;
                if (!declaredByAnyTest(method)) {
                    missing.add(repository.relativize(page) + ": " + m.group() + ": no test method starting with " + method
                            + " in any test or contract");
                }
            }
        }
        assertThat(references).as("test references found in README.md and docs/").isGreaterThan(100);
        assertThat(bare).as("bare test methods named in README.md and docs/").isGreaterThan(10);
        assertThat(missing).as("tests README.md and docs/ name that do not exist").isEmpty();
    }

    /**
     * The source of a test class named {@code faults.SomeTest} (under {@code io/reactivelock}), or
     * {@code SomeTest} in any package, in the (Java or Kotlin) tests of any module; null if none.
     */
    private static Path find(String name) throws IOException {
        for (Path root : ROOTS) {
            Path base = root.resolve("io/reactivelock");
            if (name.contains(".")) {
                Path qualified = base.resolve(name.replace('.', '/') + ".java");
                if (Files.isRegularFile(qualified)) {
                    return qualified;
                }
                continue;
            }
            try (Stream<Path> sources = Files.walk(root)) {
                Path found = sources.filter(p -> p.getFileName().toString().equals(name + ".java")
                        || p.getFileName().toString().equals(name + ".kt")).findFirst().orElse(null);
                if (found != null) {
                    return found;
                }
            }
        }
        return null;
    }

    /** Whether a test or contract of any module declares a method starting with {@code prefix}. */
    private static boolean declaredByAnyTest(String prefix) throws IOException {
        for (Path root : ROOTS) {
            try (Stream<Path> sources = Files.walk(root)) {
                for (Path source : (Iterable<Path>) sources.filter(Files::isRegularFile)::iterator) {
                    String code = Files.readString(source);
                    if (code.contains("void " + prefix) || code.contains("fun " + prefix)) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    /**
     * Whether the class in {@code source}, or a class it extends (found by its simple name in the
     * tests of any module or the published contracts), declares a method starting with {@code prefix}.
     */
    private static boolean declares(Path source, String prefix) throws IOException {
        String code = Files.readString(source);
        if (code.contains("void " + prefix) || code.contains("fun " + prefix)) {
            return true;
        }
        Matcher parent = Pattern.compile("extends (\\w+)").matcher(code);
        Path parentSource = parent.find() ? find(parent.group(1)) : null;
        return parentSource != null && declares(parentSource, prefix);
    }
}
