package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The library's module exports its API packages and nothing else: the acquisition core stays internal. */
class ModuleExportsTest {

    @Test
    void onlyTheApiPackagesAreExported() throws IOException, URISyntaxException {
        // The library's own classes directory: the class path has other module-info.class files.
        Path classes = Path.of(ReactiveLock.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        try (InputStream in = Files.newInputStream(classes.resolve("module-info.class"))) {
            ModuleDescriptor module = ModuleDescriptor.read(in);
            assertThat(module.name()).isEqualTo("io.reactivelock");
            assertThat(module.exports().stream().map(ModuleDescriptor.Exports::source).collect(Collectors.toSet()))
                    .containsExactlyInAnyOrder("io.reactivelock", "io.reactivelock.inspect", "io.reactivelock.micrometer", "io.reactivelock.redlock",
                            "io.reactivelock.spring", "io.reactivelock.testing")
                    .doesNotContain("io.reactivelock.internal");
        }
    }
}
