package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.support.ClassFile;
import io.reactivelock.support.TestSources;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The API package ({@code io.reactivelock}) depends on none of the library's other packages: not on
 * the Redis client, the engine ({@code spi}) or the inspector. They build on the API, never the
 * other way round, so a picture of the imports draws the API at the bottom. Checked twice: in the
 * sources, whose imports a javadoc {@code {@link}} may need (a fully qualified link needs none), and
 * in the compiled classes, whose constant pools name every type the code uses, imported or not.
 */
class ApiPackageDependenciesTest {

    /** An import of a type of a package below io.reactivelock (a package name is lower case, a nested type not). */
    private static final Pattern OTHER_PACKAGE_IMPORT = Pattern.compile("^import\\s+(static\\s+)?io\\.reactivelock\\.[a-z]");
    /** A type of a package below io.reactivelock, as a class file names it. */
    private static final Pattern OTHER_PACKAGE_TYPE = Pattern.compile("io/reactivelock/[a-z]\\w*/");

    @Test
    void theApiSourcesImportNothingFromTheLibrarysOtherPackages() throws IOException {
        Path api = TestSources.repository().resolve("reactive-lock/src/main/java/io/reactivelock");
        List<String> found = new ArrayList<>();
        int sources = 0;
        try (Stream<Path> files = Files.list(api)) {
            for (Path file : (Iterable<Path>) files.filter(f -> f.toString().endsWith(".java"))::iterator) {
                sources++;
                Files.readAllLines(file).stream().filter(line -> OTHER_PACKAGE_IMPORT.matcher(line).find())
                        .forEach(line -> found.add(file.getFileName() + ": " + line));
            }
        }
        assertThat(sources).as("source files read (the API's, not an empty directory)").isGreaterThan(10);
        assertThat(found).as("imports of io.reactivelock.redis, .spi, .inspect... in the API package").isEmpty();
    }

    @Test
    void theApiClassesNameNoTypeOfTheLibrarysOtherPackages() throws IOException, URISyntaxException {
        Path classes = Path.of(ReactiveLock.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> found = new ArrayList<>();
        int classFiles = 0;
        boolean namesItsOwnPackage = false;
        try (Stream<Path> files = Files.list(classes.resolve("io/reactivelock"))) {
            for (Path file : (Iterable<Path>) files.filter(f -> f.toString().endsWith(".class"))::iterator) {
                classFiles++;
                List<String> texts = ClassFile.read(Files.readAllBytes(file)).texts();
                namesItsOwnPackage |= texts.stream().anyMatch(text -> text.contains("io/reactivelock/LockLease"));
                texts.stream().filter(text -> OTHER_PACKAGE_TYPE.matcher(text).find())
                        .forEach(text -> found.add(file.getFileName() + ": " + text));
            }
        }
        assertThat(classFiles).as("class files read (the API's, not an empty directory)").isGreaterThan(10);
        assertThat(namesItsOwnPackage).as("the reader sees the references the classes do have").isTrue();
        assertThat(found).as("types of io.reactivelock.redis, .spi, .inspect... named by the API's classes").isEmpty();
    }
}
