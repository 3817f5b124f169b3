package io.reactivelock.support;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;

/**
 * Where the tests of every module are, for the checks over all of them (no sleeps, the README's test
 * references): each module's {@code src/test/java} and {@code src/test/kotlin}, found by walking the
 * repository from the core's directory, and reactive-lock-test's published test code (the contracts).
 */
public final class TestSources {

    /** reactive-lock-test's main sources: test code that users run. */
    private static final Path PUBLISHED_TEST_CODE = Path.of("reactive-lock", "test", "src", "main", "java");

    private TestSources() {}

    /** The repository's root: the parent of the core module's directory, which the tests run in. */
    public static Path repository() {
        Path repository = Path.of(System.getProperty("basedir", "")).toAbsolutePath().resolve("..").normalize();
        assertThat(repository.resolve("README.md")).as("the repository's root, above the core module").isRegularFile();
        return repository;
    }

    /** The test source roots of every module, and the published test code. */
    public static List<Path> roots() {
        Path repository = repository();
        List<Path> roots = new ArrayList<>();
        try {
            Files.walkFileTree(repository, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attributes) {
                    String name = dir.getFileName().toString();
                    if (!dir.equals(repository) && (name.startsWith(".") || name.equals("target"))) {
                        return FileVisitResult.SKIP_SUBTREE; // .git, .mvn, build output
                    }
                    if (dir.endsWith(Path.of("src", "test", "java")) || dir.endsWith(Path.of("src", "test", "kotlin"))) {
                        roots.add(dir);
                        return FileVisitResult.SKIP_SUBTREE;
                    }
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        roots.add(repository.resolve(PUBLISHED_TEST_CODE));
        assertThat(roots).as("the test sources of every module")
                .contains(repository.resolve("reactive-lock/src/test/java"), repository.resolve("reactive-lock/test/src/test/java"),
                        repository.resolve("reactive-lock/kotlin/src/test/kotlin"), repository.resolve("examples-webflux/src/test/java"),
                        repository.resolve(PUBLISHED_TEST_CODE));
        return roots;
    }
}
