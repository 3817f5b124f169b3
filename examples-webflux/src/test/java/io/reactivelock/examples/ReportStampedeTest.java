package io.reactivelock.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.examples.report.Report;
import io.reactivelock.examples.report.ReportService;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.HttpMethod;
import org.springframework.test.web.reactive.server.WebTestClient;
import tools.jackson.databind.json.JsonMapper;

@ExampleAppTest
class ReportStampedeTest {

    @Autowired
    WebTestClient web;

    @LocalServerPort
    int port;

    @Autowired
    ReportService reports;

    @Autowired
    JsonMapper json;

    @Test
    @DisplayName("100 concurrent requests for an uncached report run the expensive computation once and all get its value")
    void stampedeComputesOnce() {
        String id = "q-" + UUID.randomUUID().toString().substring(0, 8);
        long before = reports.computations();

        List<Answer> answers = Concurrently.send(port, 100, HttpMethod.GET, "/reports/" + id);

        assertThat(answers).extracting(Answer::status).containsOnly(200).hasSize(100);
        List<Report> got = answers.stream().map(answer -> json.readValue(answer.body(), Report.class)).toList();
        assertThat(got).extracting(Report::value).containsOnly(got.get(0).value());
        assertThat(got).extracting(Report::computedAt).containsOnly(got.get(0).computedAt());
        assertThat(reports.computations() - before).isEqualTo(1);
    }

    @Test
    @DisplayName("a cached report is served from Redis without computing it again")
    void cachedReportIsNotRecomputed() {
        String id = "q-" + UUID.randomUUID().toString().substring(0, 8);
        Report first = web.get().uri("/reports/{id}", id).exchange()
                .expectStatus().isOk().expectBody(Report.class).returnResult().getResponseBody();
        long after = reports.computations();

        Report second = web.get().uri("/reports/{id}", id).exchange()
                .expectStatus().isOk().expectBody(Report.class).returnResult().getResponseBody();

        assertThat(second).isEqualTo(first);
        assertThat(reports.computations()).isEqualTo(after);
    }
}
