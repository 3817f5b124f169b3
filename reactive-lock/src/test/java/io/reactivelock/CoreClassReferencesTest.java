package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.support.ClassFile;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The core jar names no Spring and no Micrometer type: those integrations are the starter's and
 * reactive-lock-micrometer's, and a user of the core alone gets neither on the class path. Reads
 * what the jar is made of (this module's classes directory) as bytes: every class's constant pool
 * (the types, members and modules it refers to, its descriptors, signatures and string literals,
 * so a reflective {@code Class.forName("org.springframework…")} counts too) and every resource.
 */
class CoreClassReferencesTest {

    private static final List<String> FORBIDDEN = List.of(
            "org/springframework/", "org.springframework.", "io/micrometer/", "io.micrometer.", "META-INF/spring");

    @Test
    void theCoreJarNamesNoSpringAndNoMicrometerType() throws IOException, URISyntaxException {
        Path classes = Path.of(ReactiveLock.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> found = new ArrayList<>();
        int classFiles = 0;
        boolean namesLettuce = false;
        try (Stream<Path> files = Files.walk(classes)) {
            for (Path file : (Iterable<Path>) files.filter(Files::isRegularFile)::iterator) {
                String entry = classes.relativize(file).toString().replace('\\', '/');
                List<String> texts;
                if (entry.endsWith(".class")) {
                    classFiles++;
                    texts = ClassFile.read(Files.readAllBytes(file)).texts();
                    namesLettuce |= texts.stream().anyMatch(text -> text.contains("io/lettuce/core/"));
                } else {
                    texts = List.of(entry, Files.readString(file));
                }
                texts.stream().filter(text -> FORBIDDEN.stream().anyMatch(text::contains))
                        .forEach(text -> found.add(entry + ": " + text));
            }
        }
        assertThat(classFiles).as("class files read (the library's, not an empty directory)").isGreaterThan(50);
        assertThat(namesLettuce).as("the reader sees the references the classes do have (Lettuce's)").isTrue();
        assertThat(found).as("Spring or Micrometer names in the core's classes and resources").isEmpty();
    }
}
