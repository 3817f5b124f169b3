package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.util.Objects;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The library's module exports its API packages and nothing else: the acquisition core stays internal. */
class ModuleExportsTest {

    @Test
    void onlyTheApiPackagesAreExported() throws IOException {
        try (InputStream in = Objects.requireNonNull(ReactiveLock.class.getResourceAsStream("/module-info.class"))) {
            ModuleDescriptor module = ModuleDescriptor.read(in);
            assertThat(module.name()).isEqualTo("io.reactivelock");
            assertThat(module.exports().stream().map(ModuleDescriptor.Exports::source).collect(Collectors.toSet()))
                    .containsExactlyInAnyOrder("io.reactivelock", "io.reactivelock.micrometer", "io.reactivelock.redlock",
                            "io.reactivelock.spring", "io.reactivelock.testing")
                    .doesNotContain("io.reactivelock.internal");
        }
    }
}
