package io.reactivelock.examples.docs;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisURI;
import io.reactivelock.examples.docs.DocPages.Block;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.testing.InMemoryReactiveLock;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the examples of README.md and docs/ that a user would paste into a test or a {@code main},
 * from the pages' own text, each with a timeout: a block whose fence is preceded by the line
 * {@value #MARKER}. {@link JavaSnippetsTest} compiles every block; this test also runs the marked
 * ones, so an example that throws, or never ends (a {@code StepVerifier} waiting for a signal that
 * cannot come), fails the build with its page and line.
 *
 * <p>A block is compiled as {@link JavaSnippetsTest} compiles it, with one change: the address
 * {@value #LOCAL_REDIS} the examples connect to becomes the address of a {@code redis-server} this
 * test starts (the test support's {@link RedisServer}, on a free port), so an example that reaches
 * "a local Redis" runs against a real one. A block of statements runs as a method of the snippet
 * class, whose {@code redis} is a client of that server and {@code locks} an in-memory client; a
 * block that declares a class with a {@code main} runs that {@code main}. The list of what ran, with
 * the time each took, is printed to the build log at the end ({@code [docs] ran ...}).
 */
class DocExamplesRunTest {

    /** The line before a block's opening fence that marks it as an example this test runs. */
    static final String MARKER = "<!-- runs: DocExamplesRunTest -->";

    /** The Redis address the examples are written for; replaced by the test server's. */
    static final String LOCAL_REDIS = "redis://localhost:6379";

    /**
     * How long one example may take, compiled and with Lettuce loaded before it starts: a hang
     * detector, not a claim (each takes about a second alone; loading Lettuce's and Netty's classes
     * under BlockHound took 25 s on a 2-core machine at load 20, hence the warm-up).
     */
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    /** The examples that must stay marked: a page that drops its marker, or its example, fails here. */
    private static final List<String> REQUIRED = List.of(
            "README.md#A first lock",
            "docs/testing.md#The in-memory client", "docs/testing.md#Virtual time",
            "docs/semaphore.md#Semaphore", "docs/read-write-lock.md#Read-write lock");

    /** Where the examples are compiled: the class's, since the dynamic tests run after the factory returns. */
    @TempDir
    static Path out;

    private static final List<String> ran = new ArrayList<>();
    private static RedisServer server;
    private static ReactiveRedisLock redis;

    @AfterAll
    static void report() {
        if (redis != null) {
            redis.close();
        }
        if (server != null) {
            server.close();
        }
        // To the JVM's own standard error, which Surefire does not redirect: the list reaches the build log.
        PrintStream log = new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8);
        ran.forEach(line -> log.println("[docs] ran " + line));
    }

    @Test
    void theExamplesAUserPastesAreMarked() {
        List<String> marked = examples().stream().map(e -> e.page() + "#" + e.heading()).toList();
        assertThat(marked).as("examples marked with " + MARKER).containsAll(REQUIRED);
    }

    @TestFactory
    List<DynamicTest> eachMarkedExampleRunsToItsEnd() throws IOException {
        List<Example> examples = examples();
        List<Block> blocks = examples.stream().map(Example::runnable).toList();
        assertThat(JavaSnippetsTest.compile(blocks, out)).as("compiler errors in the marked examples").isEmpty();
        URLClassLoader loader = new URLClassLoader(new URL[] {out.toUri().toURL()}, getClass().getClassLoader());
        if (examples.stream().anyMatch(Example::needsRedis)) {
            redis(); // loads the client's classes before any example's clock starts
        }
        List<DynamicTest> tests = new ArrayList<>();
        for (int i = 0; i < examples.size(); i++) {
            Example example = examples.get(i);
            String className = "docsnippets.Snippet" + i;
            tests.add(DynamicTest.dynamicTest(example.toString(), () -> run(example, loader.loadClass(className))));
        }
        return tests;
    }

    /** Runs one example on a thread of its own, so that one that never ends fails after the timeout. */
    private static void run(Example example, Class<?> snippet) throws Exception {
        Runnable body = entryPoint(example, snippet);
        long start = System.nanoTime();
        CompletableFuture<Void> done = new CompletableFuture<>();
        Thread thread = new Thread(() -> {
            try {
                body.run();
                done.complete(null);
            } catch (Throwable e) {
                done.completeExceptionally(e);
            }
        }, "doc-example " + example);
        thread.setDaemon(true); // one that hangs must not keep the test JVM alive
        thread.start();
        try {
            done.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            AssertionError hung = new AssertionError(example + " did not end within " + TIMEOUT.toSeconds() + " s");
            hung.setStackTrace(thread.getStackTrace()); // where it was stuck
            thread.interrupt();
            throw hung;
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() instanceof InvocationTargetException i ? i.getCause() : e.getCause();
            throw new AssertionError(example + " threw " + cause, cause);
        }
        ran.add(String.format("%-32s %-40s %6d ms", example.where(), example.heading(),
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)));
    }

    /** The class's {@code main}, for a block that declares one; else the block's statements. */
    private static Runnable entryPoint(Example example, Class<?> snippet) throws Exception {
        for (Class<?> nested : snippet.getDeclaredClasses()) {
            for (Method method : nested.getDeclaredMethods()) {
                if (method.getName().equals("main") && Modifier.isStatic(method.getModifiers())
                        && method.getParameterCount() == 1 && method.getParameterTypes()[0] == String[].class) {
                    method.setAccessible(true);
                    return () -> invoke(() -> method.invoke(null, (Object) new String[0]));
                }
            }
        }
        Method statements = snippet.getDeclaredMethod("snippet");
        statements.setAccessible(true);
        var constructor = snippet.getDeclaredConstructor();
        constructor.setAccessible(true);
        Object instance = constructor.newInstance();
        set(instance, "locks", InMemoryReactiveLock.create());
        if (example.needsRedis()) {
            set(instance, "redis", redis());
            set(instance, "uri", RedisURI.create(serverAddress()));
        }
        return () -> invoke(() -> statements.invoke(instance));
    }

    private interface Call {
        void run() throws Exception;
    }

    private static void invoke(Call call) {
        try {
            call.run();
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Sets one of the givens the snippet class declares (see {@link JavaSnippetsTest}). */
    private static void set(Object instance, String field, Object value) throws ReflectiveOperationException {
        Field f = instance.getClass().getDeclaredField(field);
        f.setAccessible(true);
        f.set(instance, value);
    }

    private static synchronized String serverAddress() {
        if (server == null) {
            server = RedisServer.start(); // skips (an aborted test) where the build runs without a server
        }
        return "redis://" + server.host() + ":" + server.port();
    }

    private static synchronized ReactiveRedisLock redis() {
        if (redis == null) {
            redis = ReactiveRedisLock.create(RedisURI.create(serverAddress()));
        }
        return redis;
    }

    /** One marked block, with the heading it is under. */
    record Example(Block block, String page, String heading) {

        boolean needsRedis() {
            return String.join("\n", block.lines()).matches("(?s).*\\bredis\\b.*");
        }

        /** The block as it runs: the Redis address it is written for replaced by the test server's. */
        Block runnable() {
            if (block.lines().stream().noneMatch(l -> l.contains(LOCAL_REDIS))) {
                return block;
            }
            String address = serverAddress();
            return new Block(block.language(), block.page(), block.firstLine(),
                    block.lines().stream().map(l -> l.replace(LOCAL_REDIS, address)).toList());
        }

        String where() {
            return block.where();
        }

        @Override
        public String toString() {
            return where() + " (" + heading + ")";
        }
    }

    /** The marked blocks of README.md and docs/, in page order, as written. */
    static List<Example> examples() {
        List<Example> examples = new ArrayList<>();
        for (Path page : DocPages.pages()) {
            List<String> lines;
            try {
                lines = Files.readAllLines(page);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            for (Block block : DocPages.blocks(page, List.of("java"))) {
                int fence = block.firstLine() - 2; // 0-based index of the opening fence
                if (fence < 1 || !lines.get(fence - 1).strip().equals(MARKER)) {
                    continue;
                }
                String heading = "";
                for (int i = fence; i >= 0 && heading.isEmpty(); i--) {
                    if (lines.get(i).startsWith("#")) {
                        heading = lines.get(i).replaceFirst("^#+\\s*", "");
                    }
                }
                examples.add(new Example(block, DocPages.repository().relativize(page).toString(), heading));
            }
        }
        return examples;
    }
}
