package io.reactivelock.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Model-checks the protocols (src/model: lock.pml, the non-fair lock; fair.pml, the fair lock;
 * semaphore.pml; rwlock.pml, the read-write lock; multilock.pml, the multi-lock beside the single
 * lock; redlock.pml, the Redlock client over three nodes; see the README there) with spin: every
 * property holds over the whole bounded state space, and each seeded protocol bug is found, with
 * the property it breaks, so that the properties cannot silently become vacuous. Skipped, with the reason, where {@code spin} or {@code gcc} is not
 * installed ({@code .ci/run} installs Debian's spin).
 */
class ProtocolModelCheckTest {

    private static final Path MODEL = Path.of("src/model");
    private static final Path WORK = Path.of("target/model");
    /** What the failed assertion's text shows, per property (the ghost each one reads). */
    private static final Map<String, String> MARKS = Map.ofEntries(Map.entry("mutex", "hold["),
            Map.entry("fence", "g_flast"), Map.entry("sleepers", "g_reg["), Map.entry("grace", "g_keptAt"),
            Map.entry("ttl", "g_gone["), Map.entry("fifo", "g_ahead["), Map.entry("lapse", "g_dl["),
            Map.entry("leave", "g_left["), Map.entry("handoff", "g_handAt"), Map.entry("permits", "used<="),
            Map.entry("rw", "&& !((i<"), Map.entry("none", "lk_tok[zn]"));

    @BeforeAll
    static void toolsPresent() {
        assumeFalse("skip".equals(System.getProperty("model.check")),
                "the fast tier (-Pfast) leaves the model check (the models of src/model, about a minute of CPU) to ./mvnw verify");
        assumeTrue(onPath("spin"), "spin is not installed (apt-get install spin): the protocol model is not checked");
        assumeTrue(onPath("gcc"), "gcc is not installed: spin's verifier cannot be compiled, the protocol model is not checked");
    }

    /** Each model, the work directory of its check, the properties its asserts check, and the spin defines of the run. */
    @ParameterizedTest(name = "{0}.pml {3}: {2}")
    @CsvSource({
        "lock, verified, 'mutex, fence, sleepers, grace, ttl', ''",
        "fair, fair-verified, 'mutex, fence, fifo, lapse, leave, handoff, ttl', ''",
        "semaphore, semaphore-verified, permits, ''",
        "rwlock, rwlock-verified, 'rw, fence', ''",
        "multilock, multilock-verified, 'mutex, fence, none, sleepers, grace, ttl', ''",
        "multilock, multilock-split-verified, 'mutex, fence, none, sleepers, grace, ttl', -DSPLIT",
        "redlock, redlock-verified, mutex, ''",
    })
    void everyPropertyHoldsOverTheWholeBoundedStateSpace(String model, String name, String properties, String defines)
            throws Exception {
        String report = check(model, name, defines.isBlank() ? List.of() : List.of(defines.split(" ")));
        assertThat(report).contains("Full statespace search").contains("assertion violations\t+").contains("errors: 0");
        System.out.println("[model] " + model + ".pml " + defines + ", all properties (" + properties + "): " + summary(report));
    }

    /**
     * The seeded bugs every build looks for, one per model, each found within seconds (lock.pml's in
     * about 800,000 states, the others in a few thousand): they show the check still finds a broken script. The others test the model rather than the
     * code, at about a minute of CPU; {@code -Dmodel.bugs=all} runs them (after a change to a model).
     */
    private static final Set<String> EVERY_BUILD = Set.of("lock-FENCE_NO_INCREMENT", "fair-CLAIM_NO_TOKEN_CHECK",
            "semaphore-RENEW_FROM_REPLY", "rwlock-WRITE_IGNORES_READERS", "multilock-SPLIT_KEEPS_FIRST", "redlock-MINORITY");

    /**
     * Each seeded bug of each model, the property that must catch it (the ghost its failed assert
     * reads), and the spin defines it needs: those that need a third client or a second acquisition
     * run with it (the search stops at the first counterexample, so the larger bounds stay cheap).
     */
    @ParameterizedTest(name = "{0}.pml {1} breaks {2}")
    @CsvSource({
        "lock, RELEASE_NO_TOKEN_CHECK, mutex, -DR=2",
        "lock, KEEP_FOR_TTL, grace, ''",
        "lock, CLAIM_NO_MARK, sleepers, -DR=2",
        "lock, RENEW_KEPT, grace, -DSTALE_ATTEMPT",
        "lock, FENCE_NO_INCREMENT, fence, ''",
        "lock, RENEW_FROM_REPLY, mutex, ''",
        "lock, FENCE_RETENTION_TTL, fence, -DCLOCK_STEP",
        "lock, CLAIM_NO_EXPIRY, ttl, ''",
        "lock, NO_SLEEPERS_MARK, sleepers, ''",
        "fair, CLAIM_NO_TOKEN_CHECK, mutex, ''",
        "fair, GRANT_IGNORES_LINE, fifo, ''",
        "fair, REQUEUE, fifo, ''",
        "fair, RELEASE_TO_LAST, fifo, -DNC=3 -DR=1",
        "fair, NAMED_FIRST, fifo, -DNC=3 -DR=1",
        "fair, LEAVE_NOT_REMOVED, leave, ''",
        "fair, RELEASE_NO_DEADLINE, lapse, ''",
        "fair, NO_DROP, lapse, ''",
        "fair, HANDOFF_FOR_TTL, handoff, -DTTL=3",
        "semaphore, KEY_TTL_OWN, permits, ''",
        "semaphore, RENEW_RESURRECTS, permits, ''",
        "semaphore, RENEW_FROM_REPLY, permits, ''",
        "semaphore, NO_CAPACITY_CHECK, permits, ''",
        "rwlock, READ_IGNORES_WRITER, rw, ''",
        "rwlock, WRITE_IGNORES_READERS, rw, ''",
        "rwlock, FENCE_NO_INCREMENT, fence, ''",
        "multilock, REFUSAL_KEEPS, none, -DNC=3",
        "multilock, SPLIT_KEEPS_FIRST, none, -DSPLIT",
        "multilock, FENCE_FIRST_NAME, fence, ''",
        "multilock, RENEW_SOME, mutex, ''",
        "multilock, RENEW_FROM_REPLY, mutex, ''",
        "multilock, SLEEP_NO_MARK, sleepers, ''",
        "redlock, MINORITY, mutex, ''",
        "redlock, VALIDITY_FROM_REPLY, mutex, ''",
        "redlock, NO_DRIFT, mutex, ''",
        "redlock, RENEW_FROM_REPLY, mutex, ''",
        "redlock, RELEASE_NO_TOKEN_CHECK, mutex, ''",
    })
    void aSeededBugIsFound(String model, String bug, String property, String defines) throws Exception {
        assumeTrue("all".equals(System.getProperty("model.bugs")) || EVERY_BUILD.contains(model + "-" + bug),
                "a seeded bug checked with -Dmodel.bugs=all (this build looks for " + EVERY_BUILD + ")");
        List<String> args = new ArrayList<>(List.of("-DBUG_" + bug));
        if (!defines.isBlank()) {
            args.addAll(List.of(defines.split(" ")));
        }
        String report = check(model, model + "-" + bug, args);
        assertThat(report).as("spin finds BUG_%s in %s.pml", bug, model).contains("errors: 1");
        String violated = report.lines().filter(l -> l.contains("assertion violated")).findFirst().orElse("");
        assertThat(violated).as("the counterexample breaks the %s property", property).contains(MARKS.get(property));
        System.out.println("[model] " + model + ".pml BUG_" + bug + " found (" + property + "): " + summary(report));
    }

    private static String summary(String report) {
        return report.lines().filter(l -> l.contains("states, stored") || l.contains("elapsed time") || l.contains("depth reached"))
                .map(String::strip).reduce((a, b) -> a + "; " + b).orElse("?");
    }

    private static String check(String model, String name, List<String> defines) throws IOException, InterruptedException {
        Path dir = WORK.resolve(name);
        // At the machine's normal priority: at nice 19, beside two busy loops on 2 cores, the check
        // starved until surefire killed its JVM after 15 minutes.
        List<String> command = new ArrayList<>(List.of("bash", MODEL.resolve("check.sh").toString(), dir.toString(), model));
        command.addAll(defines);
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        assertThat(p.waitFor(5, TimeUnit.MINUTES)).as("spin finished").isTrue();
        String report = new String(out, StandardCharsets.UTF_8);
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("report.txt"), report);
        assertThat(p.exitValue()).as("check.sh ran:%n%s", report).isZero();
        return report;
    }

    private static boolean onPath(String tool) {
        String path = System.getenv("PATH");
        if (path == null) {
            return false;
        }
        for (String d : path.split(java.io.File.pathSeparator)) {
            if (Files.isExecutable(Path.of(d, tool))) {
                return true;
            }
        }
        return false;
    }
}
