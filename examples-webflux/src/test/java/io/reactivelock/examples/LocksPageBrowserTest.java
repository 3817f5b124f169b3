package io.reactivelock.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockLease;
import io.reactivelock.ReactiveLock;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.ReactiveSemaphore;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.examples.redis.RedisEndpoint;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The live page {@code /locks} in a real browser (headless Chromium over the DevTools protocol)
 * while a load runs through the app's lock: the table shows the held lock with its holder and its
 * waiters, and a semaphore's permits and a read-write lock's readers, the TTL cell counts down, the
 * chart draws the meters' samples, and the page fits a phone's width. Saves
 * {@code target/locks-page.png} (the README's picture comes from it).
 *
 * <p>The app's lock is fair here, so that the waiters queue in Redis where the page can count them.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {"reactive-lock.fair=true", "reactive-lock.acquire-timeout=5m", "reactive-lock.max-lease-time=10m"})
@ExtendWith(OutputCaptureExtension.class)
class LocksPageBrowserTest {

    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final Path TARGET = Path.of("target");
    private static final String HELD = "sale:tee-42";

    @LocalServerPort
    int port;

    @Autowired
    ReactiveLock locks;

    @Autowired
    RedisEndpoint redis;

    private final List<Disposable> load = new ArrayList<>();
    private final List<AutoCloseable> primitives = new ArrayList<>();

    @AfterEach
    void stopTheLoad() throws Exception {
        load.forEach(Disposable::dispose);
        for (AutoCloseable primitive : primitives) {
            primitive.close();
        }
    }

    /** Holders of 2 and 1 permits of the semaphore {@code exports}, and two readers of the read-write lock {@code catalog}. */
    private void holdASemaphoreAndAReadLock() {
        ReactiveRedisLock client = ReactiveRedisLock.create(redis.uri());
        primitives.add(client);
        ReactiveSemaphore semaphore = client.semaphore(4);
        ReactiveReadWriteLock readWrite = client.readWriteLock();
        AtomicInteger holding = new AtomicInteger();
        for (int permits = 2; permits >= 1; permits--) {
            load.add(semaphore.withPermits("exports", permits, Duration.ofSeconds(5), lease -> {
                holding.incrementAndGet();
                return Mono.never();
            }).subscribe());
            load.add(readWrite.withReadLock("catalog", Duration.ofSeconds(5), lease -> {
                holding.incrementAndGet();
                return Mono.never();
            }).subscribe());
        }
        await().atMost(WAIT).until(() -> holding.get() == 4);
    }

    /** One long holder of {@link #HELD} with two waiters, and short bodies on three other locks. */
    private LockLease startTheLoad() {
        AtomicReference<LockLease> holder = new AtomicReference<>();
        load.add(locks.withLock(HELD, Duration.ofSeconds(5), lease -> {
            holder.set(lease);
            return Sinks.empty().asMono();
        }).subscribe());
        await().atMost(WAIT).until(() -> holder.get() != null);
        for (int i = 0; i < 2; i++) {
            load.add(locks.withLock(HELD, Duration.ofSeconds(5), lease -> Mono.empty()).subscribe(value -> {}, error -> {}));
        }
        // Bodies of 20 ms, six at a time on three names (so some wait), for at most two minutes.
        load.add(Flux.range(0, Integer.MAX_VALUE)
                .flatMap(i -> locks.withLock("report:q" + i % 3, Duration.ofSeconds(2), Mono.delay(Duration.ofMillis(20))), 6)
                .take(Duration.ofMinutes(2))
                .subscribe(value -> {}, error -> {}));
        return holder.get();
    }

    @Test
    @DisplayName("/locks shows the held lock, its waiters and a counting-down TTL, and charts the meters, in Chromium")
    void theLivePageInABrowser(CapturedOutput output) throws IOException {
        Path chromium = HeadlessChromium.executable(TARGET.resolve("chromium-install.log"));
        LockLease holder = startTheLoad();
        holdASemaphoreAndAReadLock();
        String url = "http://127.0.0.1:" + port + "/locks";
        assertThat(output.getOut()).as("the start-up log names the page").contains("Live view of the locks: " + url);

        try (HeadlessChromium browser = HeadlessChromium.launch(chromium, TARGET.resolve("browser"), 1000, 1000)) {
            browser.open(url);
            String row = "document.querySelector('tr[data-lock=\"" + HELD + "\"]')";

            await("the held lock in the table, with its two waiters").atMost(WAIT).until(() ->
                    "2".equals(browser.eval(row + "?.querySelector('.waiting').textContent")));
            assertThat(browser.eval(row + ".querySelector('th').textContent")).isEqualTo(HELD);
            assertThat(browser.eval(row + ".querySelector('code').textContent")).isEqualTo(holder.token().substring(0, 8));
            assertThat(browser.eval(row + ".querySelector('.fence').textContent")).isEqualTo(Long.toString(holder.fencingToken()));
            assertThat(browser.eval("document.getElementById('status').textContent")).isEqualTo("Live");
            assertThat(browser.eval(row + ".querySelector('.kind').textContent")).isEqualTo("lock");

            String semaphore = "document.querySelector('tr[data-lock=\"exports\"][data-kind=\"semaphore\"]')";
            String readWrite = "document.querySelector('tr[data-lock=\"catalog\"][data-kind=\"read-write\"]')";
            await("the semaphore and the read-write lock in the table").atMost(WAIT).until(() ->
                    "3 permits, 2 holders".equals(browser.eval(semaphore + "?.querySelector('.shared').textContent"))
                            && "2 readers".equals(browser.eval(readWrite + "?.querySelector('.shared').textContent")));
            assertThat(browser.eval(readWrite + ".querySelector('code').textContent")).as("no writer").isEqualTo("–");
            assertThat(browser.eval(row + ".querySelector('.shared').textContent")).as("a lock has neither").isEqualTo("–");

            String ttl = browser.eval(row + ".querySelector('.ttl').textContent");
            assertThat(ttl).matches("[0-9]+\\.[0-9] s");
            await("the TTL cell to change").atMost(WAIT).until(() -> !ttl.equals(browser.eval(row + ".querySelector('.ttl').textContent")));

            await("the chart to draw five samples").atMost(WAIT).until(() ->
                    Integer.parseInt(browser.eval("document.getElementById('chart').dataset.drawnPoints || '0'")) >= 5);
            assertThat(browser.evaluate(ACQUISITION_LINE_PIXELS).asInt())
                    .as("pixels of the acquisitions line on the chart's canvas").isGreaterThan(20);
            assertThat(browser.eval("document.querySelector('[data-metric=acquiredPerSecond]').textContent"))
                    .as("acquisitions per second in the last sample").matches("[0-9]+\\.[0-9]").isNotEqualTo("0.0");
            // Two bodies at a time per name: each release finds a waiter in this process and hands it the lock.
            await("hand-offs per second in a sample").atMost(WAIT).until(() ->
                    browser.eval("document.querySelector('[data-metric=handOffsPerSecond]').textContent").matches("[0-9]+\\.[0-9]")
                            && !"0.0".equals(browser.eval("document.querySelector('[data-metric=handOffsPerSecond]').textContent")));

            browser.screenshot(TARGET.resolve("locks-page.png"));

            browser.resize(360, 740);
            await("the chart to fit the narrow screen").atMost(WAIT).until(() ->
                    browser.evaluate("document.querySelector('#chart canvas').getBoundingClientRect().right <= innerWidth").asBoolean());
            assertThat(browser.evaluate("document.documentElement.scrollWidth <= innerWidth").asBoolean())
                    .as("no sideways scrolling of the page on a 360 px screen (the table scrolls in its own box)").isTrue();
            browser.screenshot(TARGET.resolve("locks-page-narrow.png"));
        }
    }

    /** Counts the canvas pixels of the acquisitions line's colour (#1565c0, give or take anti-aliasing). */
    private static final String ACQUISITION_LINE_PIXELS = """
            (() => {
              const canvas = document.querySelector('#chart canvas');
              const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
              let count = 0;
              for (let i = 0; i < pixels.length; i += 4) {
                if (pixels[i + 3] > 200 && Math.abs(pixels[i] - 0x15) < 24 && Math.abs(pixels[i + 1] - 0x65) < 24
                    && Math.abs(pixels[i + 2] - 0xc0) < 24) {
                  count++;
                }
              }
              return count;
            })()""";
}
