package io.reactivelock.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

/**
 * The app with its embedded redis-server, run in a JVM of its own as a user runs it, and ended as
 * a terminal's Ctrl-C or a crash ends it.
 */
class EmbeddedRedisShutdownTest {

    private static final Pattern STARTED =
            Pattern.compile("started redis://127\\.0\\.0\\.1:(\\d+) \\(embedded redis-server, pid (\\d+)");
    private static final Duration WAIT = Duration.ofSeconds(60);

    @Test
    @EnabledOnOs(value = OS.LINUX, disabledReason = "setsid, which keeps redis-server out of the app's process group, is Linux's")
    @DisplayName("Ctrl-C (SIGINT to the app's process group) does not reach the embedded redis-server: the app stops it last, after the web server")
    void ctrlCStopsRedisLast(@TempDir Path temp) throws Exception {
        // In a session and process group of its own, as a terminal's foreground job is.
        try (App app = App.start(temp, "setsid")) {
            signal("INT", "-" + app.process.pid());
            if (ignoresSigint(app.process.pid())) {
                // A build started in the background of a non-interactive shell ignores SIGINT, and so
                // do the JVMs it starts. SIGTERM starts the same shutdown; the group had its SIGINT.
                signal("TERM", Long.toString(app.process.pid()));
            }

            assertThat(app.process.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS)).as("the app exits").isTrue();
            String log = app.log();
            String stopped = "Stopped the embedded redis-server on 127.0.0.1:" + app.redisPort + " (pid " + app.redisPid + ")";
            assertThat(log).as("redis-server alive until the app stopped it").contains(stopped);
            assertThat(log.indexOf(stopped)).as("stopped after the web server").isGreaterThan(log.indexOf("Graceful shutdown complete"));
            assertThat(log.indexOf("Graceful shutdown complete")).isPositive();
            assertThat(log).as("no connection lost on the way").doesNotContain("Reconnecting", "Cannot reconnect");
            assertThat(ProcessHandle.of(app.redisPid).filter(ProcessHandle::isAlive)).isEmpty();
            assertThat(app.redisDirectory).doesNotExist();
        }
    }

    @Test
    @DisplayName("the embedded redis-server and its directory go with the app's JVM, also when that JVM is killed with SIGKILL")
    void redisEndsWithAKilledJvm(@TempDir Path temp) throws Exception {
        try (App app = App.start(temp)) {
            app.process.destroyForcibly();
            assertThat(app.process.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();

            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
                    .until(() -> ProcessHandle.of(app.redisPid).filter(ProcessHandle::isAlive).isEmpty());
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
                    .until(() -> !Files.exists(app.redisDirectory));
        }
    }

    private static void signal(String signal, String target) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-s", signal, "--", target).inheritIO().start();
        assertThat(kill.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(kill.exitValue()).as("kill -s %s -- %s", signal, target).isZero();
    }

    /** Whether the process ignores SIGINT (bit 2 of SigIgn in /proc/<pid>/status). */
    private static boolean ignoresSigint(long pid) throws IOException {
        String ignored = Files.readAllLines(Path.of("/proc", Long.toString(pid), "status")).stream()
                .filter(line -> line.startsWith("SigIgn:")).findFirst().orElseThrow()
                .substring("SigIgn:".length()).trim();
        return (Long.parseUnsignedLong(ignored, 16) & (1L << 1)) != 0;
    }

    /** The app in a forked JVM (the test's class path), started with no Redis configured. */
    private static final class App implements AutoCloseable {

        final Process process;
        final Path output;
        final int redisPort;
        final long redisPid;
        final Path redisDirectory;

        private App(Process process, Path output, int redisPort, long redisPid, Path redisDirectory) {
            this.process = process;
            this.output = output;
            this.redisPort = redisPort;
            this.redisPid = redisPid;
            this.redisDirectory = redisDirectory;
        }

        /** Starts the app, prefixed by {@code launcher} (such as setsid), and waits until it listens. */
        static App start(Path temp, String... launcher) throws IOException {
            Path output = temp.resolve("app.log");
            List<String> command = new ArrayList<>(List.of(launcher));
            command.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-XX:+AllowRedefinitionToAddDeleteMethods", // BlockHound's, as in the test JVMs
                    "-XX:TieredStopAtLevel=1", // starts faster; the app does little here
                    "-cp", System.getProperty("java.class.path"),
                    ForkedExampleApplication.class.getName(),
                    "--server.port=0", "--example.redis.url="));
            Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile()).start();
            try {
                await().atMost(WAIT).pollInterval(Duration.ofMillis(50))
                        .until(() -> !process.isAlive() || Files.readString(output).contains("reactive-lock example listening on"));
                String log = Files.readString(output);
                assertThat(process.isAlive()).as("the app started; its output:%n%s", log).isTrue();
                Matcher started = STARTED.matcher(log);
                assertThat(started.find()).as("the app started its embedded redis-server; its output:%n%s", log).isTrue();
                long redisPid = Long.parseLong(started.group(2));
                Path executable = Path.of(ProcessHandle.of(redisPid).orElseThrow().info().command().orElseThrow());
                return new App(process, output, Integer.parseInt(started.group(1)), redisPid, executable.getParent());
            } catch (RuntimeException | Error e) {
                process.destroyForcibly();
                throw e;
            }
        }

        String log() throws IOException {
            return Files.readString(output);
        }

        /** Whatever the test did, nothing it started outlives it. */
        @Override
        public void close() {
            process.destroyForcibly();
            ProcessHandle.of(redisPid).ifPresent(ProcessHandle::destroyForcibly);
        }
    }
}
