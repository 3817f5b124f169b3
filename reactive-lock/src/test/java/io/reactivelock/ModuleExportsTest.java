package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The library's module exports its API packages and nothing else: the API, the inspector, the
 * engine a backend is written on ({@code spi}, which reactive-lock-test's in-memory doubles use),
 * and the Redis backend, whose only public types are its clients, their options and the Netty
 * customizer of their connections, everything
 * else there (stores, scripts, key names) staying package-private; and it reads Reactor, Lettuce
 * and the Netty that Lettuce runs on (for {@code ConsolidatedFlushes}), no integration (Spring and
 * Micrometer have modules of their own).
 */
class ModuleExportsTest {

    @Test
    void onlyTheApiPackagesAreExported() throws IOException, URISyntaxException {
        ModuleDescriptor module = coreModule();
        assertThat(module.name()).isEqualTo("io.reactivelock");
        assertThat(module.exports().stream().filter(e -> !e.isQualified()).map(ModuleDescriptor.Exports::source))
                .containsExactlyInAnyOrder("io.reactivelock", "io.reactivelock.inspect", "io.reactivelock.spi",
                        "io.reactivelock.redis");
        assertThat(module.exports()).as("qualified exports").noneMatch(ModuleDescriptor.Exports::isQualified);
        assertThat(module.opens()).isEmpty();
    }

    @Test
    void theRedisPackageHasNoPublicTypeButTheClientsTheRedlockOptionsAndTheConsolidatedFlushes() throws Exception {
        Path classes = classesDirectory();
        List<String> accessible = new ArrayList<>();
        int classFiles = 0;
        try (Stream<Path> files = Files.list(classes.resolve("io/reactivelock/redis"))) {
            for (Path file : (Iterable<Path>) files.filter(f -> f.toString().endsWith(".class"))::iterator) {
                classFiles++;
                String name = "io.reactivelock.redis." + file.getFileName().toString().replace(".class", "");
                Class<?> type = Class.forName(name, false, ReactiveLock.class.getClassLoader());
                if (accessibleOutsideThePackage(type)) {
                    accessible.add(type.getName());
                }
            }
        }
        assertThat(classFiles).as("class files read (the library's, not an empty directory)").isGreaterThan(10);
        assertThat(accessible).as("types of io.reactivelock.redis that code outside it can name")
                .containsExactlyInAnyOrder("io.reactivelock.redis.ReactiveRedisLock", "io.reactivelock.redis.ReactiveRedlock",
                        "io.reactivelock.redis.RedlockOptions", "io.reactivelock.redis.ConsolidatedFlushes");
    }

    /** Whether {@code type} and every class enclosing it are public or protected (a nested type of a subclassable one). */
    private static boolean accessibleOutsideThePackage(Class<?> type) {
        for (Class<?> t = type; t != null; t = t.getEnclosingClass()) {
            if (t.isAnonymousClass() || t.isLocalClass()
                    || !(Modifier.isPublic(t.getModifiers()) || Modifier.isProtected(t.getModifiers()))) {
                return false;
            }
        }
        return true;
    }

    @Test
    void readsReactorLettuceAndItsNettyAndNoIntegration() throws IOException, URISyntaxException {
        assertThat(coreModule().requires().stream().map(ModuleDescriptor.Requires::name))
                .containsExactlyInAnyOrder("java.base", "reactor.core", "org.reactivestreams", "lettuce.core", "org.jspecify",
                        "io.netty.common", "io.netty.transport", "io.netty.handler");
    }

    /** The library's own classes directory: the class path has other module-info.class files. */
    private static Path classesDirectory() throws URISyntaxException {
        return Path.of(ReactiveLock.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    private static ModuleDescriptor coreModule() throws IOException, URISyntaxException {
        try (InputStream in = Files.newInputStream(classesDirectory().resolve("module-info.class"))) {
            return ModuleDescriptor.read(in);
        }
    }
}
