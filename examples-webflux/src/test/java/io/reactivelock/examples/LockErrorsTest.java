package io.reactivelock.examples;

import io.lettuce.core.api.StatefulRedisConnection;
import io.reactivelock.ReactiveLock;
import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.webtestclient.autoconfigure.AutoConfigureWebTestClient;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/** How the lock's own failures reach HTTP clients: 503 with Retry-After. A short acquire timeout here. */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT, properties = "reactive-lock.acquire-timeout=200ms")
@AutoConfigureWebTestClient
@Import(LockErrorsTest.LoseLockController.class)
class LockErrorsTest {

    @Autowired
    WebTestClient web;

    @Autowired
    ReactiveLock locks;

    Sales sales;

    @BeforeEach
    void setUp() {
        sales = new Sales(web);
    }

    @Test
    @DisplayName("a purchase that cannot get the SKU's lock within the acquire timeout answers 503 with Retry-After")
    void busyLockAnswers503WithRetryAfter() {
        String sku = sales.newSku(10);
        Sinks.One<Long> held = Sinks.one();
        Sinks.Empty<Void> release = Sinks.empty();
        // Someone else holds the SKU's lock until we say so.
        locks.withLock("sale:" + sku, Duration.ofSeconds(10), lease -> {
            held.tryEmitValue(lease.fencingToken());
            return release.asMono();
        }).subscribe();
        held.asMono().block();
        try {
            web.post().uri("/skus/{sku}/purchase", sku).exchange()
                    .expectStatus().isEqualTo(503)
                    .expectHeader().valueEquals(HttpHeaders.RETRY_AFTER, "1")
                    .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON)
                    .expectBody()
                    .jsonPath("$.type").isEqualTo("https://example.org/problems/lock-busy")
                    .jsonPath("$.lock").isEqualTo("sale:" + sku);
        } finally {
            release.tryEmitEmpty();
        }
        web.post().uri("/skus/{sku}/purchase", sku).exchange().expectStatus().isCreated();
    }

    @Test
    @DisplayName("a request whose lock is lost while it runs answers 503 lock-lost with Retry-After")
    void lostLockAnswers503() {
        web.post().uri("/test/lose-lock/{name}", "doomed").exchange()
                .expectStatus().isEqualTo(503)
                .expectHeader().valueEquals(HttpHeaders.RETRY_AFTER, "1")
                .expectBody()
                .jsonPath("$.type").isEqualTo("https://example.org/problems/lock-lost")
                .jsonPath("$.lock").isEqualTo("doomed");
    }

    /**
     * Holds a lock and deletes its key behind its back, as a Redis restart or failover would: the
     * next renewal finds the key gone and {@code withLock} fails with {@code LockLostException}.
     */
    @RestController
    static class LoseLockController {

        private final ReactiveLock locks;
        private final StatefulRedisConnection<String, String> redis;

        LoseLockController(ReactiveLock locks, StatefulRedisConnection<String, String> redis) {
            this.locks = locks;
            this.redis = redis;
        }

        @PostMapping("/test/lose-lock/{name}")
        Mono<String> loseLock(@PathVariable String name) {
            // The key layout (prefix:{name}) is the library's; there is no public way to ask for it.
            return locks.withLock(name, Duration.ofMillis(300),
                    lease -> redis.reactive().del("lock:{" + name + "}").then(Mono.never()));
        }
    }
}
