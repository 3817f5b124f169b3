package io.reactivelock.support;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Finds the {@code redis-server} executable: the system property {@code redis.server} or environment
 * variable {@code REDIS_SERVER}; else {@code redis-server} on the {@code PATH}; else the binary for this
 * OS and architecture shipped in the {@code com.github.codemonstur:embedded-redis} jar on the test class
 * path, extracted once per JVM.
 */
final class RedisBinary {

    private static Path extracted;

    private RedisBinary() {
    }

    static synchronized Path path() {
        String configured = System.getProperty("redis.server", System.getenv("REDIS_SERVER"));
        if (configured != null && !configured.isBlank()) {
            Path binary = Path.of(configured);
            if (!Files.isRegularFile(binary) || !Files.isExecutable(binary)) {
                throw new IllegalStateException("redis.server / REDIS_SERVER names " + binary + ", which is not an executable file");
            }
            return binary;
        }
        Optional<Path> onPath = onPath();
        if (onPath.isPresent()) {
            return onPath.get();
        }
        if (extracted == null) {
            extracted = extract();
        }
        return extracted;
    }

    private static Optional<Path> onPath() {
        String path = System.getenv("PATH");
        if (path == null) {
            return Optional.empty();
        }
        return Stream.of(path.split(File.pathSeparator))
                .filter(dir -> !dir.isEmpty())
                .flatMap(dir -> {
                    try {
                        return Stream.of(Path.of(dir, "redis-server"));
                    } catch (InvalidPathException malformedEntry) {
                        return Stream.empty();
                    }
                })
                .filter(file -> Files.isRegularFile(file) && Files.isExecutable(file))
                .findFirst();
    }

    private static Path extract() {
        String os = System.getProperty("os.name") + "/" + System.getProperty("os.arch");
        String resource = resourceFor(os.toLowerCase(Locale.ROOT));
        InputStream in = resource == null ? null : RedisBinary.class.getClassLoader().getResourceAsStream(resource);
        if (in == null) {
            throw new IllegalStateException("No redis-server for " + os + ": set -Dredis.server=/path/to/redis-server"
                    + " (or REDIS_SERVER), put redis-server on the PATH, or have com.github.codemonstur:embedded-redis"
                    + " (which ships Linux and macOS binaries for x86-64 and ARM64) on the test class path");
        }
        try (in) {
            Path binary = Files.createTempFile("redis-server-", "");
            binary.toFile().deleteOnExit();
            Files.copy(in, binary, StandardCopyOption.REPLACE_EXISTING);
            Files.setPosixFilePermissions(binary, PosixFilePermissions.fromString("rwx------"));
            return binary;
        } catch (IOException e) {
            throw new UncheckedIOException("could not extract " + resource + " from the class path", e);
        }
    }

    /** The resource names are those of embedded-redis 1.4.4. */
    private static String resourceFor(String osAndArch) {
        boolean x64 = osAndArch.endsWith("/amd64") || osAndArch.endsWith("/x86_64");
        boolean arm64 = osAndArch.endsWith("/aarch64") || osAndArch.endsWith("/arm64");
        if (osAndArch.startsWith("linux")) {
            return x64 ? "redis-server-6.2.6-v5-linux-amd64" : arm64 ? "redis-server-6.2.7-linux-arm64" : null;
        }
        if (osAndArch.startsWith("mac")) {
            return x64 ? "redis-server-6.2.6-v5-darwin-amd64" : arm64 ? "redis-server-6.2.6-v5-darwin-arm64" : null;
        }
        return null;
    }
}
