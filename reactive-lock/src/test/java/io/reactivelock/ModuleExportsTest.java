package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.support.TestSources;
import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The library's module exports its API packages and nothing else: the acquisition core stays
 * internal, open only to the in-memory doubles of reactive-lock-test (stores on the same core); and
 * it reads Reactor and Lettuce, no integration (Spring and Micrometer have modules of their own).
 */
class ModuleExportsTest {

    @Test
    void onlyTheApiPackagesAreExported() throws IOException, URISyntaxException {
        ModuleDescriptor module = coreModule();
        assertThat(module.name()).isEqualTo("io.reactivelock");
        assertThat(module.exports().stream().filter(e -> !e.isQualified()).map(ModuleDescriptor.Exports::source))
                .containsExactlyInAnyOrder("io.reactivelock", "io.reactivelock.inspect", "io.reactivelock.redlock");
        assertThat(module.exports().stream().filter(ModuleDescriptor.Exports::isQualified)
                .collect(Collectors.toMap(ModuleDescriptor.Exports::source, ModuleDescriptor.Exports::targets)))
                .isEqualTo(Map.of("io.reactivelock.internal", Set.of("io.reactivelock.testing")));
        assertThat(module.opens()).isEmpty();
    }

    @Test
    void theInternalPackageGoesToTheModuleNameReactiveLockTestDeclares() throws IOException {
        // Renamed there, the in-memory locks would fail on the module path with IllegalAccessError.
        String pom = Files.readString(TestSources.repository().resolve("reactive-lock/test/pom.xml"));
        assertThat(pom).contains("<Automatic-Module-Name>io.reactivelock.testing</Automatic-Module-Name>");
    }

    @Test
    void readsReactorAndLettuceAndNoIntegration() throws IOException, URISyntaxException {
        assertThat(coreModule().requires().stream().map(ModuleDescriptor.Requires::name))
                .containsExactlyInAnyOrder("java.base", "reactor.core", "org.reactivestreams", "lettuce.core", "org.jspecify");
    }

    private static ModuleDescriptor coreModule() throws IOException, URISyntaxException {
        // The library's own classes directory: the class path has other module-info.class files.
        Path classes = Path.of(ReactiveLock.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        try (InputStream in = Files.newInputStream(classes.resolve("module-info.class"))) {
            return ModuleDescriptor.read(in);
        }
    }
}
