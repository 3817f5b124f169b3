package io.reactivelock.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.support.CriticalSectionHistory;
import io.reactivelock.support.CriticalSectionHistory.Section;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Contenders in three separate JVMs, forked with the test class path, against one Redis: the
 * checker sees one section at a time, rising fencing tokens and no lost update with the lock, and
 * the damage without it. Each contender runs under BlockHound, with the test JVMs' integrations,
 * and exits with an error if BlockHound is not active there.
 */
@WithRedis
class MultiProcessMutualExclusionTest {

    private static final int PROCESSES = 3;
    private static final int SECTIONS_EACH = 40;
    /** BlockHound changes JDK classes; JDK 13+ allows it only with this flag (the test JVMs' argLine has it too). */
    private static final String BLOCKHOUND_JVM_FLAG = "-XX:+AllowRedefinitionToAddDeleteMethods";

    @Test
    void threeJvmsTakingTheLockNeverOverlapAndLoseNoUpdate(RedisServer redis) throws Exception {
        CriticalSectionHistory history = runContenders(redis, "lock");

        assertThat(history.sections()).hasSize(PROCESSES * SECTIONS_EACH);
        assertThat(history.overlaps()).as("sections inside at once").isEmpty();
        assertThat(history.maxOccupancy()).isEqualTo(1);
        assertThat(history.fencingViolations()).isEmpty();
        assertThat(history.lostUpdates(Long.parseLong(redis.call("GET", LockContender.COUNTER)))).isZero();
        assertThat(history.sections()).extracting(Section::process).containsOnly("jvm-0", "jvm-1", "jvm-2");
    }

    @Test
    void threeJvmsWithoutTheLockAreCaughtOverlappingAndLosingUpdates(RedisServer redis) throws Exception {
        CriticalSectionHistory history = runContenders(redis, "none");

        assertThat(history.sections()).hasSize(PROCESSES * SECTIONS_EACH);
        assertThat(history.maxOccupancy()).as("negative control: overlap seen").isGreaterThan(1);
        List<Section> sections = history.sections();
        assertThat(sections.stream().anyMatch(a -> sections.stream().anyMatch(b -> !a.process().equals(b.process())
                        && a.enterNanos() < b.exitNanos() && b.enterNanos() < a.exitNanos())))
                .as("overlaps between processes are seen: nanoTime is one clock for the JVMs of a host").isTrue();
        assertThat(history.lostUpdates(Long.parseLong(redis.call("GET", LockContender.COUNTER))))
                .as("negative control: lost updates seen").isPositive();
    }

    private static CriticalSectionHistory runContenders(RedisServer redis, String mode) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<Process> processes = new ArrayList<>();
        List<Path> logs = new ArrayList<>();
        try {
            for (int i = 0; i < PROCESSES; i++) {
                Path log = Files.createTempFile("lock-contender-" + i, ".log");
                logs.add(log);
                processes.add(new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                        "-XX:TieredStopAtLevel=1", "-Xshare:auto", BLOCKHOUND_JVM_FLAG,
                        LockContender.class.getName(), String.valueOf(redis.port()), "jvm-" + i,
                        String.valueOf(SECTIONS_EACH), String.valueOf(PROCESSES), mode)
                        .redirectErrorStream(true)
                        .redirectOutput(log.toFile())
                        .start());
            }
            for (int i = 0; i < PROCESSES; i++) {
                Process process = processes.get(i);
                assertThat(process.waitFor(90, TimeUnit.SECONDS)).as("jvm-%d finished", i).isTrue();
                assertThat(process.exitValue()).as("jvm-%d exit code; its output:%n%s", i, read(logs.get(i))).isZero();
            }
        } finally {
            processes.forEach(Process::destroyForcibly);
            for (Path log : logs) {
                Files.deleteIfExists(log);
            }
        }
        return CriticalSectionHistory.of(redis.callList("LRANGE", LockContender.HISTORY, "0", "-1").stream()
                .map(line -> Section.decode((String) line))
                .toList());
    }

    private static String read(Path log) throws IOException {
        return Files.readString(log);
    }
}
