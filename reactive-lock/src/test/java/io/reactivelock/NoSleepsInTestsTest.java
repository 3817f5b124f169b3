package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.support.TestSources;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * No test waits for something to happen by sleeping (Kotlin's {@code delay} included): a test awaits the state it needs (Awaitility, a
 * latch, a sink) or drives time virtually. Every sleep or delay in the test sources of every module
 * (and in reactive-lock-test's published contracts) must be on
 * {@link #ALLOWED}, with the reason it is not a wait; an entry that no longer matches fails too, so
 * the list stays true.
 */
class NoSleepsInTestsTest {

    private static final Pattern SLEEP_OR_DELAY = Pattern.compile(
            "Thread\\.sleep\\(|TimeUnit\\.\\w+\\.sleep\\(|LockSupport\\.park|Mono\\.delay\\(|\\.delayElements?\\(|\\.delaySubscription\\("
                    // Kotlin's delay (kotlinx.coroutines), suspending a coroutine as a sleep blocks a thread.
                    + "|\\bdelay\\(");

    /** A use of a sleep or delay that is not a wait: the file, a piece of its line, and why. */
    private record Allowed(String file, String line, String reason) {}

    private static final List<Allowed> ALLOWED = List.of(
            new Allowed("io/reactivelock/support/CancelStorm.java", "Mono.delay(Duration.ofMillis(1)).doOnNext(t -> entered.tryEmitValue(true))",
                    "a cancel storm's trigger to cut a body 1 ms into it, so that some cancels hit running bodies"),
            new Allowed("io/reactivelock/support/CancelStorm.java", "Mono.delay(Duration.ofMillis(random.nextInt(bodyMillis)))",
                    "bodies of random length, so that random cancels land before, in and after them"),
            new Allowed("io/reactivelock/testing/CancelStorm.java", "Mono.delay(Duration.ofMillis(1)).doOnNext(t -> entered.tryEmitValue(true))",
                    "a cancel storm's trigger to cut a body 1 ms into it, so that some cancels hit running bodies"),
            new Allowed("io/reactivelock/testing/CancelStorm.java", "Mono.delay(Duration.ofMillis(random.nextInt(bodyMillis)))",
                    "bodies of random length, so that random cancels land before, in and after them"),
            new Allowed("io/reactivelock/support/BlockHoundActiveTest.java", "Mono.delay(Duration.ofMillis(1))",
                    "gets the blocking call below onto a Reactor parallel thread"),
            new Allowed("io/reactivelock/support/BlockHoundActiveTest.java", "Thread.sleep(10)",
                    "the blocking call BlockHound must report"),
            new Allowed("io/reactivelock/support/BlockHoundActiveTest.java", "Thread.sleep(1)",
                    "the blocking call BlockHound must report in a forked JVM"),
            new Allowed("io/reactivelock/support/ShortLocksBlockHoundIntegrationTest.java", "Thread.sleep(1)",
                    "the blocking call BlockHound must report or allow, which is what the test is about"),
            new Allowed("io/reactivelock/examples/BlockHoundActiveTest.java", "Thread.sleep(1)",
                    "the blocking call BlockHound must report in the example app's test JVM"),
            new Allowed("io/reactivelock/testing/Eventually.java", ".repeatWhenEmpty(tries -> tries.delayElements(POLL))",
                    "the contracts' await: the pause between two checks of a state, which ends as soon as it holds"),
            new Allowed("io/reactivelock/testing/InMemoryReactiveLockVirtualTimeTest.java", "Mono.delay(Duration.ofSeconds(5))",
                    "a body that lasts 5 s of virtual time, which the test moves on with thenAwait"),
            new Allowed("io/reactivelock/testing/ReadWriteLockContract.java", "Mono.delay(Duration.ofMillis(5000))",
                    "a body that outlives its TTL, which is what the test is about"),
            new Allowed("io/reactivelock/testing/SemaphoreContract.java", "Mono.delay(Duration.ofMillis(5000))",
                    "a body that outlives its TTL, which is what the test is about"),
            new Allowed("io/reactivelock/MultiLockContract.java", "Mono.delay(Duration.ofMillis(2500))",
                    "a body that outlives its TTL, which is what the test is about"),
            new Allowed("io/reactivelock/MultiLockContract.java", ".delayElement(Duration.ofMillis(2))",
                    "the window in which two unprotected bodies hold one name"),
            new Allowed("io/reactivelock/MultiLockRedisTest.java", ".delayElement(Duration.ofMillis(2))",
                    "the window in which two unprotected bodies hold one name"),
            new Allowed("io/reactivelock/redis/MultiLockClusterTest.java", ".delayElement(Duration.ofMillis(2))",
                    "the window in which two unprotected bodies hold one name"),
            new Allowed("io/reactivelock/testing/ReadWriteLockContract.java", ".delayElement(Duration.ofMillis(2))",
                    "the window between read and write in which an unprotected body breaks the checker"),
            new Allowed("io/reactivelock/testing/SemaphoreContract.java", ".delayElement(Duration.ofMillis(2))",
                    "the window in which an unprotected body exceeds the capacity"),
            new Allowed("io/reactivelock/examples/LocksPageBrowserTest.java", "Mono.delay(Duration.ofMillis(20))",
                    "bodies of a background load that keeps locks held and waited for while the page is read"),
            new Allowed("io/reactivelock/nemesis/NemesisClient.java", "run.takeUntilOther(Mono.delay(Duration.ofMillis(cancelMillis)))",
                    "a random cancellation of an operation, one of the faults the nemesis run injects"),
            new Allowed("io/reactivelock/nemesis/NemesisClient.java", ".then(Mono.delay(Duration.ofMillis(random.nextLong(0, THINK_MILLIS))))",
                    "a client's think time between operations: the load's shape, not a wait for a state"),
            new Allowed("io/reactivelock/nemesis/NemesisClient.java", "Mono.delay(Duration.ofMillis(op.bodyMillis))",
                    "bodies of random length, some past the TTL, which is what the run is about"),
            new Allowed("io/reactivelock/nemesis/NemesisClient.java", "LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2))",
                    "the client's output thread idles between batches of history lines, on its own thread"),
            new Allowed("io/reactivelock/nemesis/StallWatch.java", "LockSupport.parkNanos(TICK_NANOS)",
                    "the stall watch's own tick: how late it wakes measures how long its JVM did not run"),
            new Allowed("io/reactivelock/support/RedisServer.java", "Thread.sleep(duration.toMillis())",
                    "poll interval of the harness's start-up loop, which checks the server's state after each sleep"),
            new Allowed("io/reactivelock/support/TcpProxy.java", "LockSupport.parkNanos(frozen ? POLL_NANOS : wait)",
                    "the latency and freezing the proxy injects, on its own thread"),
            new Allowed("io/reactivelock/support/CounterWorkload.java", ".delayElement(Duration.ofMillis(2))",
                    "the window between read and write in which an unprotected body loses updates"),
            new Allowed("io/reactivelock/faults/LockContender.java", ".delayElement(Duration.ofMillis(1))",
                    "the window between read and write in which an unprotected body loses updates"),
            new Allowed("io/reactivelock/testing/ReactiveLockContract.java", ".delayElement(Duration.ofMillis(2))",
                    "the window between read and write in which an unprotected body loses updates"),
            new Allowed("io/reactivelock/faults/LatencyTest.java", ".delayElement(Duration.ofMillis(100))",
                    "the window between read and write in which an unprotected body loses updates"),
            new Allowed("io/reactivelock/faults/LatencyTest.java", ".delayElement(Duration.ofMillis(1200))",
                    "a body that outlives its 1 s TTL, which is what the test is about"),
            new Allowed("io/reactivelock/testing/ReactiveLockContract.java", "Mono.delay(Duration.ofMillis(2500))",
                    "a body that outlives its 1 s TTL, which is what the test is about"),
            new Allowed("io/reactivelock/redis/RedlockLockTest.java", "Mono.delay(SHORT_TTL.multipliedBy(3))",
                    "a body that outlives its TTL, which is what the test is about"),
            new Allowed("io/reactivelock/LeaderElectionTest.java", "Mono.delay(Duration.ofMillis(1 + random.nextInt(20)))",
                    "terms of random length, so that random cancels land while candidates wait, lead and step down"),
            new Allowed("io/reactivelock/redis/CancellationSafetyTest.java", "Mono.delay(Duration.ofNanos(random.nextInt(2_000_000)))",
                    "bodies of random length, so that random cancels land before, in and after them"),
            new Allowed("io/reactivelock/redis/RedlockLockTest.java", "Mono.delay(Duration.ofNanos(random.nextInt(2_000_000)))",
                    "bodies of random length, so that random cancels land before, in and after them"),
            new Allowed("io/reactivelock/redis/RedlockLockTest.java", ".then(Mono.delay(cancelAfter))",
                    "the random moment of a cancel (counted from the call or from the body's start), not a wait"),
            new Allowed("io/reactivelock/testing/Eventually.java", ".repeatWhenEmpty(tries -> tries.delayElements(POLL))",
                    "the contracts' await: the pause between two checks of a state, which ends as soon as it holds"),
            new Allowed("io/reactivelock/testing/InMemoryReactiveLockVirtualTimeTest.java", "Mono.delay(Duration.ofSeconds(295))",
                    "a body's length in virtual time"),
            new Allowed("io/reactivelock/testing/Eventually.java", ".repeatWhenEmpty(tries -> tries.delayElements(POLL))",
                    "the contracts' await: the pause between two checks of a state, which ends as soon as it holds"),
            new Allowed("io/reactivelock/testing/InMemoryReactiveLockVirtualTimeTest.java", "Mono.delay(Duration.ofSeconds(3))",
                    "a body's length in virtual time"),
            new Allowed("io/reactivelock/kotlin/BlockHoundActiveTest.kt", "Mono.delay(Duration.ofMillis(1))",
                    "gets the blocking call below onto a Reactor parallel thread"),
            new Allowed("io/reactivelock/kotlin/BlockHoundActiveTest.kt", "Thread.sleep(10)",
                    "the blocking call BlockHound must report, on a Reactor thread and in a block on Dispatchers.Default"),
            new Allowed("io/reactivelock/kotlin/WithLockFlowVirtualTimeTest.kt", "if (page < 3) delay(1.seconds)",
                    "the time between two pages of a flow, in runTest's virtual time"),
            new Allowed("io/reactivelock/kotlin/WithLockFlowVirtualTimeTest.kt", ".onEach { delay(1.seconds) }",
                    "a slow collector, in runTest's virtual time"),
            new Allowed("io/reactivelock/kotlin/WithLockFlowVirtualTimeTest.kt", "delay(1.minutes)",
                    "a flow that goes on past its lost lease, in runTest's virtual time"),
            new Allowed("io/reactivelock/kotlin/WithLockVirtualTimeTest.kt", "delay(5.minutes)",
                    "a block's length in runTest's virtual time"),
            new Allowed("io/reactivelock/kotlin/WithLockVirtualTimeTest.kt", "delay(4.minutes)",
                    "moves runTest's virtual time to a point inside the block"),
            new Allowed("io/reactivelock/kotlin/WithLockVirtualTimeTest.kt", "delay(5.seconds)",
                    "moves runTest's virtual time to a point in the waiter's wait"),
            new Allowed("io/reactivelock/kotlin/WithLockVirtualTimeTest.kt", "delay(4.seconds)",
                    "moves runTest's virtual time past the other holder's TTL"),
            new Allowed("io/reactivelock/kotlin/WithLockVirtualTimeTest.kt", "delay(3.seconds)",
                    "a block's length in runTest's virtual time"),
            new Allowed("io/reactivelock/kotlin/TestScopeScheduler.kt", "delay(delayMillis)",
                    "a timer of the Reactor scheduler that runs on runTest's virtual time"),
            new Allowed("io/reactivelock/kotlin/TestScopeScheduler.kt", "delay(periodMillis)",
                    "a periodic timer of the Reactor scheduler that runs on runTest's virtual time"),
            new Allowed("io/reactivelock/kotlin/RedisWithLockTest.kt", "delay(1.milliseconds) // another holder",
                    "the window between read and write in which an unprotected block loses updates"),
            new Allowed("io/reactivelock/kotlin/RedisWithLockTest.kt", "delay(1.milliseconds)",
                    "the sampler's interval between two reads of the active leases: a load probe, not a wait"),
            new Allowed("io/reactivelock/kotlin/RedisWithLockTest.kt", "delay(Random.nextLong(60).milliseconds)",
                    "blocks of random length, so that random cancels land before, in and after them"),
            new Allowed("io/reactivelock/kotlin/RedisWithLockTest.kt", "0 -> delay(Random.nextLong(3).milliseconds)",
                    "a random time before the cancel, so that cancels land before, in and after the blocks"),
            new Allowed("io/reactivelock/kotlin/RedisWithLockTest.kt", "1 -> delay(Random.nextLong(80).milliseconds)",
                    "a random time before the cancel, so that cancels land before, in and after the blocks"),
            new Allowed("io/reactivelock/kotlin/RedisWithLockTest.kt", "if (entered.await()) delay(Random.nextLong(30).milliseconds)",
                    "a random time inside the block before the cancel"),
            new Allowed("io/reactivelock/kotlin/RedisPrimitivesCoroutinesTest.kt", "delay(5.milliseconds) // a fourth holder",
                    "the window in which an unprotected block exceeds the capacity"),
            new Allowed("io/reactivelock/kotlin/RedisPrimitivesCoroutinesTest.kt", "delay(2.milliseconds)",
                    "the window in which a block beside another (writer or multi-lock holder) would be seen"),
            new Allowed("io/reactivelock/spring/LockedScheduledJobTest.java", "Mono.delay(runLength())",
                    "a scheduled job's run, on a timer thread and mostly longer than the 20 ms between ticks, so that runs"
                            + " overlap unless the lock prevents it"));

    @Test
    void everySleepOrDelayInTheTestSourcesIsOnTheAllowListWithItsReason() {
        Path repository = TestSources.repository();
        List<Path> roots = TestSources.roots();
        List<String> unlisted = new ArrayList<>();
        Set<Allowed> used = new HashSet<>();
        for (Path dir : roots) {
            for (Path source : sourceFiles(dir)) {
                String file = dir.relativize(source).toString().replace('\\', '/');
                if (file.endsWith("/" + NoSleepsInTestsTest.class.getSimpleName() + ".java")) {
                    continue; // its list names what it looks for
                }
                List<String> lines = read(source);
                for (int i = 0; i < lines.size(); i++) {
                    String line = lines.get(i);
                    if (!SLEEP_OR_DELAY.matcher(line).find()) {
                        continue;
                    }
                    List<Allowed> covering = ALLOWED.stream().filter(a -> a.file().equals(file) && line.contains(a.line())).toList();
                    if (covering.isEmpty()) {
                        unlisted.add(repository.relativize(source) + ":" + (i + 1) + ": " + line.strip());
                    }
                    used.addAll(covering);
                }
            }
        }
        assertThat(unlisted)
                .as("sleeps and delays that are not on the allow-list: await the state you need, or list the use and why it is not a wait")
                .isEmpty();
        assertThat(ALLOWED).as("allow-list entries that match no line any more").filteredOn(a -> !used.contains(a)).isEmpty();
    }

    private static List<Path> sourceFiles(Path dir) {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            return paths.filter(p -> p.toString().endsWith(".java") || p.toString().endsWith(".kt")).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static List<String> read(Path source) {
        try {
            return Files.readAllLines(source);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
