package io.reactivelock.support;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.io.File;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The {@code redis-server} executable the tests run, chosen by the system property {@value #PROPERTY}:
 * <ul>
 *   <li>{@code embedded} (the default): the binary for this OS and architecture shipped in the
 *       {@code com.github.codemonstur:embedded-redis} jar on the test class path (Redis 6.2), extracted
 *       once per JVM;
 *   <li>{@code path}: {@code redis-server} found on the {@code PATH} (on Debian 12,
 *       {@code apt-get install redis-server} gives 7.0);
 *   <li>an absolute path to a {@code redis-server} executable;
 *   <li>{@code container} or {@code container:<image>}: each server in a container of a Docker engine
 *       ({@link RedisContainer}), on the image named, else {@code REDIS_IMAGE}, else {@value #DEFAULT_IMAGE};
 *       the tests are skipped, saying so, where no engine answers;
 *   <li>{@code none}: the fast tier ({@code -Pfast}): every test that needs a server is skipped.
 * </ul>
 * The default does not look at what the machine has installed, so that {@code ./mvnw verify} runs the
 * same Redis on a fresh machine and on one with a distribution's {@code redis-server} on the {@code PATH}.
 * Each binary's version is printed once per JVM to the JVM's own standard error, which surefire copies
 * into the build output (it sends {@code System.out} and {@code System.err} to report files).
 */
final class RedisBinary {

    static final String PROPERTY = "redis.server";

    /**
     * {@code true} in the server matrix's runs: a server {@value #PROPERTY} names that this machine
     * does not have skips the tests that need it, with the reason, instead of failing them.
     */
    static final String OPTIONAL = "redis.server.optional";

    /** The choice of the fast tier: no server at all, so the tests that need one are skipped. */
    static final String NONE = "none";

    /** The image {@code -D}{@value #PROPERTY}{@code =container} runs when {@code REDIS_IMAGE} names none. */
    static final String DEFAULT_IMAGE = "redis:7.4";

    private static final PrintStream JVM_STDERR = new PrintStream(new FileOutputStream(FileDescriptor.err), true, UTF_8);
    private static final Pattern VERSION = Pattern.compile("\\bv=(\\d+\\.\\d+\\.\\d+)\\b");
    private static final Map<String, Path> RESOLVED = new HashMap<>();
    private static final Map<Path, String> VERSIONS = new HashMap<>();
    private static final Set<String> ANNOUNCED = new HashSet<>();
    private static final Map<String, String> CONTAINER_VERSIONS = new HashMap<>();
    private static final Set<String> REPORTED_ABSENCE = new HashSet<>();

    private RedisBinary() {
    }

    /** Whether {@value #PROPERTY} is {@code container} or {@code container:<image>}: servers run in containers. */
    static boolean isContainer() {
        String choice = System.getProperty(PROPERTY, "embedded").trim();
        return choice.equals("container") || choice.startsWith("container:");
    }

    /**
     * The image of {@code -D}{@value #PROPERTY}{@code =container:<image>}; for plain {@code container},
     * the environment's {@code REDIS_IMAGE} ({@code .ci/docker-up} prints the one it built), else
     * {@value #DEFAULT_IMAGE}, the official image a Docker engine with a registry pulls.
     */
    static String containerImage() {
        String choice = System.getProperty(PROPERTY, "embedded").trim();
        if (choice.startsWith("container:")) {
            return choice.substring("container:".length());
        }
        String fromEnvironment = System.getenv("REDIS_IMAGE");
        return fromEnvironment == null || fromEnvironment.isBlank() ? DEFAULT_IMAGE : fromEnvironment.trim();
    }

    /** The binary {@value #PROPERTY} names now, resolved and its version printed at first use. */
    static synchronized Path path() {
        String choice = System.getProperty(PROPERTY, "embedded").trim();
        Path binary = RESOLVED.get(choice);
        if (binary == null) {
            binary = resolve(choice);
            String version = VERSIONS.computeIfAbsent(binary, RedisBinary::askVersion);
            RESOLVED.put(choice, binary);
            JVM_STDERR.println("[redis] tests run against redis-server " + version + " (-D" + PROPERTY + "=" + choice + ": " + binary + ")");
        }
        return binary;
    }

    /**
     * Prints, once per binary and JVM, what the first server it ran answers to {@code INFO server}
     * (name and version), so that the build log names the server each run tested.
     */
    static synchronized void announce(String source, String infoServer) {
        ServerInfo info = ServerInfo.of(infoServer);
        if (ANNOUNCED.add(source)) {
            JVM_STDERR.println("[redis] INFO server: " + info.fieldsLine() + " (" + source + ")");
        }
        CONTAINER_VERSIONS.putIfAbsent(source, info.version());
    }

    /** Whether {@value #PROPERTY} is {@value #NONE}: the fast tier, where no server runs. */
    static boolean none() {
        return System.getProperty(PROPERTY, "embedded").trim().equals(NONE);
    }

    /**
     * Why the tests that need a server cannot run, in the fast tier, or when {@value #OPTIONAL} is {@code true} and the
     * binary {@value #PROPERTY} names is not on this machine (a run of the server matrix on a clone
     * without {@code ../shared/servers}, or without a {@code redis-server} on the {@code PATH});
     * empty when they can run. The reason is printed once per JVM.
     */
    static synchronized Optional<String> absence() {
        String choice = System.getProperty(PROPERTY, "embedded").trim();
        if (none()) {
            // The fast tier (-Pfast): every test that needs a server is skipped, saying so once.
            if (REPORTED_ABSENCE.add(choice)) {
                JVM_STDERR.println("[redis] SKIPPED: -D" + PROPERTY + "=" + NONE + " (the fast tier): tests that need a Redis server are skipped");
            }
            return Optional.of("-D" + PROPERTY + "=" + NONE + ": the fast tier runs no Redis server");
        }
        if (isContainer()) {
            // Always optional: a machine without a Docker engine skips, saying so.
            Optional<String> reason = RedisContainer.dockerAnswers() ? Optional.empty()
                    : Optional.of("no Docker engine answers (Testcontainers found none; .ci/docker-up starts one)");
            if (reason.isPresent() && REPORTED_ABSENCE.add(choice)) {
                JVM_STDERR.println("[redis] SKIPPED: the tests on -D" + PROPERTY + "=" + choice + " are skipped: " + reason.get());
            }
            return reason;
        }
        if (!Boolean.getBoolean(OPTIONAL)) {
            return Optional.empty();
        }
        Optional<String> reason = switch (choice) {
            case "embedded" -> Optional.empty();
            case "path" -> onPath("redis-server").isPresent() ? Optional.empty()
                    : Optional.of("no redis-server on the PATH (Debian: apt-get install redis-server)");
            default -> {
                Path binary = Path.of(choice).normalize();
                yield Files.isRegularFile(binary) && Files.isExecutable(binary) ? Optional.empty()
                        : Optional.of(binary + " is not on this machine (the shared servers folder beside the clone)");
            }
        };
        if (reason.isPresent() && REPORTED_ABSENCE.add(choice)) {
            JVM_STDERR.println("[redis] SKIPPED: the tests on -D" + PROPERTY + "=" + choice + " are skipped: " + reason.get());
        }
        return reason;
    }

    /** The version (such as {@code 7.0.15}) of the binary {@value #PROPERTY} names now. */
    static synchronized String version() {
        if (isContainer()) {
            String version = CONTAINER_VERSIONS.get(containerImage());
            if (version == null) {
                throw new IllegalStateException("no container of " + containerImage() + " has answered yet");
            }
            return version;
        }
        return VERSIONS.get(path());
    }

    /** The first executable file called {@code name} in a directory of the {@code PATH}. */
    static Optional<Path> onPath(String name) {
        String path = System.getenv("PATH");
        if (path == null) {
            return Optional.empty();
        }
        return Stream.of(path.split(File.pathSeparator))
                .filter(dir -> !dir.isEmpty())
                .flatMap(dir -> {
                    try {
                        return Stream.of(Path.of(dir, name));
                    } catch (InvalidPathException malformedEntry) {
                        return Stream.empty();
                    }
                })
                .filter(file -> Files.isRegularFile(file) && Files.isExecutable(file))
                .findFirst();
    }

    private static Path resolve(String choice) {
        return switch (choice) {
            case "embedded" -> extract();
            case "path" -> onPath("redis-server").orElseThrow(() -> new IllegalStateException(
                    "-D" + PROPERTY + "=path, but there is no redis-server on the PATH (" + System.getenv("PATH") + ")"));
            default -> {
                Path binary = Path.of(choice).normalize();
                if (!binary.isAbsolute() || !Files.isRegularFile(binary) || !Files.isExecutable(binary)) {
                    throw new IllegalStateException("-D" + PROPERTY + " must be embedded, path or the absolute path of a"
                            + " redis-server executable, not " + choice);
                }
                yield binary;
            }
        };
    }

    private static String askVersion(Path binary) {
        try {
            Process process = new ProcessBuilder(binary.toString(), "--version").redirectErrorStream(true).start();
            String output = new String(process.getInputStream().readAllBytes(), UTF_8);
            process.waitFor();
            Matcher version = VERSION.matcher(output);
            if (!version.find()) {
                throw new IllegalStateException(binary + " --version printed no version: " + output);
            }
            return version.group(1);
        } catch (IOException e) {
            throw new UncheckedIOException("could not run " + binary + " --version", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while asking " + binary + " for its version", e);
        }
    }

    private static Path extract() {
        String os = System.getProperty("os.name") + "/" + System.getProperty("os.arch");
        String resource = resourceFor(os.toLowerCase(Locale.ROOT));
        InputStream in = resource == null ? null : RedisBinary.class.getClassLoader().getResourceAsStream(resource);
        if (in == null) {
            throw new IllegalStateException("No embedded redis-server for " + os + " (com.github.codemonstur:embedded-redis"
                    + " ships Linux and macOS binaries for x86-64 and ARM64): use -D" + PROPERTY + "=path or -D"
                    + PROPERTY + "=/path/to/redis-server");
        }
        try (in) {
            Path binary = RedisServer.Scratch.directory().resolve("redis-server");
            Files.copy(in, binary);
            Files.setPosixFilePermissions(binary, PosixFilePermissions.fromString("rwx------"));
            return binary;
        } catch (IOException e) {
            throw new UncheckedIOException("could not extract " + resource + " from the class path", e);
        }
    }

    /** The resource names are those of embedded-redis 1.4.4 (its Linux x86-64 binary reports 6.2.11). */
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
