package io.reactivelock.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.ReactiveLock;
import io.reactivelock.examples.report.Report;
import io.reactivelock.examples.report.ReportService;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.http.HttpHeaders;
import org.springframework.test.web.reactive.server.WebTestClient;
import reactor.core.publisher.Sinks;

/** {@code POST /reports/{id}/refresh}, whose service method takes the report's lock through {@code @WithLock}. */
@ExampleAppTest
class ReportRefreshTest {

    @Autowired
    WebTestClient web;

    @Autowired
    ReportService reports;

    @Autowired
    ReactiveLock locks;

    private Report get(String id) {
        return web.get().uri("/reports/{id}", id).exchange().expectStatus().isOk().expectBody(Report.class).returnResult().getResponseBody();
    }

    @Test
    @DisplayName("a refresh computes the report again and the cache serves the new one")
    void refreshComputesAgainAndCaches() {
        String id = "r-" + UUID.randomUUID().toString().substring(0, 8);
        Report first = get(id);

        Report refreshed = web.post().uri("/reports/{id}/refresh", id).exchange()
                .expectStatus().isOk().expectBody(Report.class).returnResult().getResponseBody();

        assertThat(refreshed.computation()).isGreaterThan(first.computation());
        assertThat(get(id)).isEqualTo(refreshed);
    }

    @Test
    @DisplayName("a refresh while the report's lock is held answers 503 lock-busy at once and computes nothing")
    void refreshOfAReportBeingComputedIsRefused() {
        String id = "r-" + UUID.randomUUID().toString().substring(0, 8);
        Sinks.One<Long> held = Sinks.one();
        Sinks.Empty<Void> release = Sinks.empty();
        // A cache fill of this report holds its lock until we say so.
        locks.withLock("report:" + id, Duration.ofSeconds(10), lease -> {
            held.tryEmitValue(lease.fencingToken());
            return release.asMono();
        }).subscribe();
        held.asMono().block();
        long before = reports.computations();
        try {
            web.post().uri("/reports/{id}/refresh", id).exchange()
                    .expectStatus().isEqualTo(503)
                    .expectHeader().valueEquals(HttpHeaders.RETRY_AFTER, "1")
                    .expectBody()
                    .jsonPath("$.type").isEqualTo("https://example.org/problems/lock-busy")
                    .jsonPath("$.lock").isEqualTo("report:" + id);
        } finally {
            release.tryEmitEmpty();
        }
        assertThat(reports.computations()).isEqualTo(before);
    }
}
