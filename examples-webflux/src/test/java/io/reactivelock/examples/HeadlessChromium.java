package io.reactivelock.examples;

import static org.awaitility.Awaitility.await;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * A headless Chromium (Debian's {@code chromium} package) driven over the Chrome DevTools
 * Protocol: one page, JavaScript evaluated in it, screenshots. Only what the page test needs, with
 * no driver or library beyond the JDK's WebSocket client and Jackson.
 *
 * <p>{@link #executable()} installs the package with {@code apt-get} when it is missing and this
 * JVM runs as root, and otherwise skips the calling test with the reason.
 *
 * <p>The browser reaches only loopback addresses: every other request goes to a proxy on a closed
 * local port, and its background services (updates, sync, safe browsing) are off.
 */
final class HeadlessChromium implements AutoCloseable {

    private static final Duration START_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration INSTALL_TIMEOUT = Duration.ofMinutes(15);

    private final JsonMapper json = JsonMapper.builder().build();
    private final Process process;
    private final Path profile;
    private final WebSocket socket;
    private final Map<Integer, CompletableFuture<JsonNode>> replies = new ConcurrentHashMap<>();
    private final AtomicInteger ids = new AtomicInteger();
    private final String session;

    private HeadlessChromium(Process process, Path profile, URI devtools, int width, int height) {
        this.process = process;
        this.profile = profile;
        this.socket = HttpClient.newHttpClient().newWebSocketBuilder()
                .buildAsync(devtools, new Replies()).orTimeout(COMMAND_TIMEOUT.toSeconds(), TimeUnit.SECONDS).join();
        String target = call(null, "Target.createTarget", Map.of("url", "about:blank")).get("targetId").asString();
        this.session = call(null, "Target.attachToTarget", Map.of("targetId", target, "flatten", true)).get("sessionId").asString();
        resize(width, height);
    }

    /**
     * The {@code chromium} executable: on the {@code PATH}, else installed now with {@code apt-get}
     * if this JVM may do so (root, {@code apt-get} present). Skips the test otherwise.
     */
    static Path executable(Path log) {
        Optional<Path> found = onPath("chromium");
        if (found.isPresent()) {
            return found.get();
        }
        Assumptions.assumeTrue(onPath("apt-get").isPresent() && isRoot(),
                "Skipped: the browser test needs Debian's chromium package, which is not installed, and this JVM cannot "
                        + "install it (it needs root and apt-get). Install it with: apt-get install chromium");
        String outcome = run(log, List.of("apt-get", "update")) + run(log, List.of("apt-get", "install", "-y",
                "--no-install-recommends", "chromium"));
        found = onPath("chromium");
        Assumptions.assumeTrue(found.isPresent(), "Skipped: installing Debian's chromium package failed (" + outcome
                + "); see " + log);
        return found.get();
    }

    /** Starts Chromium with a fresh profile under {@code work} and opens one blank page of {@code width} x {@code height}. */
    static HeadlessChromium launch(Path executable, Path work, int width, int height) throws IOException {
        Files.createDirectories(work);
        Path profile = Files.createTempDirectory(work, "chromium-profile-");
        List<String> command = List.of(executable.toString(),
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-default-apps", "--no-pings",
                "--disable-domain-reliability", "--disable-client-side-phishing-detection",
                "--proxy-server=http://127.0.0.1:9", // loopback is never proxied; everything else fails here
                "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
                "--user-data-dir=" + profile, "--window-size=" + width + "," + height, "about:blank");
        Process process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(work.resolve("chromium.log").toFile()).start();
        try {
            Path portFile = profile.resolve("DevToolsActivePort");
            await("Chromium's DevTools port").atMost(START_TIMEOUT).pollInterval(Duration.ofMillis(100))
                    .until(() -> !process.isAlive() || Files.exists(portFile) && Files.readAllLines(portFile).size() >= 2);
            if (!process.isAlive()) {
                throw new IllegalStateException("Chromium exited with " + process.exitValue() + "; see " + work.resolve("chromium.log"));
            }
            List<String> port = Files.readAllLines(portFile);
            return new HeadlessChromium(process, profile, URI.create("ws://127.0.0.1:" + port.get(0) + port.get(1)), width, height);
        } catch (RuntimeException e) {
            process.destroyForcibly();
            throw e;
        }
    }

    /** Loads {@code url} and waits for its load event. */
    void open(String url) {
        call(session, "Page.enable", Map.of());
        call(session, "Page.navigate", Map.of("url", url));
        await("the page to load").atMost(COMMAND_TIMEOUT)
                .until(() -> url.equals(eval("location.href")) && "complete".equals(eval("document.readyState")));
    }

    /** The value of a JavaScript expression in the page (awaited if a promise), as JSON; null for undefined. */
    JsonNode evaluate(String expression) {
        JsonNode result = call(session, "Runtime.evaluate",
                Map.of("expression", expression, "returnByValue", true, "awaitPromise", true));
        if (result.has("exceptionDetails")) {
            throw new IllegalStateException("JavaScript failed: " + result.get("exceptionDetails"));
        }
        return result.get("result").get("value");
    }

    /** {@link #evaluate} as a string: null for null or undefined. */
    String eval(String expression) {
        JsonNode value = evaluate(expression);
        return value == null || value.isNull() ? null : value.asString();
    }

    /** Makes the viewport {@code width} x {@code height} CSS pixels. */
    void resize(int width, int height) {
        call(session, "Emulation.setDeviceMetricsOverride",
                Map.of("width", width, "height", height, "deviceScaleFactor", 1, "mobile", false));
    }

    /** Saves what the viewport shows as a PNG. */
    void screenshot(Path png) throws IOException {
        String data = call(session, "Page.captureScreenshot", Map.of("format", "png")).get("data").asString();
        Files.createDirectories(png.getParent());
        Files.write(png, Base64.getDecoder().decode(data));
    }

    /** Closes the browser and waits for it to exit; deletes its profile. */
    @Override
    public void close() {
        try {
            call(null, "Browser.close", Map.of());
        } catch (RuntimeException alreadyGone) {
            // killed below
        }
        socket.abort();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        try (Stream<Path> files = Files.walk(profile)) {
            files.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
        } catch (IOException ignored) {
            // a temporary directory under target/
        }
    }

    private JsonNode call(String sessionId, String method, Map<String, Object> params) {
        int id = ids.incrementAndGet();
        ObjectNode message = json.createObjectNode().put("id", id).put("method", method);
        message.set("params", json.valueToTree(params));
        if (sessionId != null) {
            message.put("sessionId", sessionId);
        }
        CompletableFuture<JsonNode> reply = new CompletableFuture<>();
        replies.put(id, reply);
        socket.sendText(json.writeValueAsString(message), true).join();
        JsonNode answer = reply.orTimeout(COMMAND_TIMEOUT.toSeconds(), TimeUnit.SECONDS).join();
        if (answer.has("error")) {
            throw new IllegalStateException(method + " failed: " + answer.get("error"));
        }
        return answer.get("result");
    }

    /** Completes the pending command whose id a message answers; events are ignored. */
    private final class Replies implements WebSocket.Listener {

        private final StringBuilder partial = new StringBuilder();

        @Override
        public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
            partial.append(data);
            if (last) {
                JsonNode message = json.readTree(partial.toString());
                partial.setLength(0);
                if (message.has("id")) {
                    CompletableFuture<JsonNode> reply = replies.remove(message.get("id").asInt());
                    if (reply != null) {
                        reply.complete(message);
                    }
                }
            }
            webSocket.request(1);
            return null;
        }
    }

    private static Optional<Path> onPath(String program) {
        return Stream.of(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator))
                .filter(dir -> !dir.isEmpty())
                .map(dir -> Path.of(dir, program))
                .filter(Files::isExecutable)
                .findFirst();
    }

    private static boolean isRoot() {
        try {
            Process id = new ProcessBuilder("id", "-u").redirectErrorStream(true).start();
            String uid = new String(id.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            return id.waitFor() == 0 && uid.equals("0");
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Runs {@code command} non-interactively, appending its output to {@code log}; a short outcome. */
    private static String run(Path log, List<String> command) {
        try {
            Files.createDirectories(log.getParent());
            ProcessBuilder builder = new ProcessBuilder(new ArrayList<>(command)).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
            builder.environment().put("DEBIAN_FRONTEND", "noninteractive");
            Process process = builder.start();
            if (!process.waitFor(INSTALL_TIMEOUT.toMinutes(), TimeUnit.MINUTES)) {
                process.destroyForcibly();
                return String.join(" ", command) + " timed out; ";
            }
            return String.join(" ", command) + " exited " + process.exitValue() + "; ";
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return String.join(" ", command) + " interrupted; ";
        }
    }
}
