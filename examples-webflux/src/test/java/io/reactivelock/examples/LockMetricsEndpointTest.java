package io.reactivelock.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.http.HttpStatus;
import org.springframework.test.web.reactive.server.WebTestClient;

/** What an operator sees at {@code /actuator/metrics} once buyers have used the lock. */
@ExampleAppTest
class LockMetricsEndpointTest {

    @Autowired
    WebTestClient web;

    @Test
    @DisplayName("after a purchase /actuator/metrics shows one more wait for the lock, one more hold and one more observation")
    void aPurchaseShowsInTheLockTimers() {
        double waitsBefore = count("reactive.lock.acquire?tag=outcome:acquired");
        double holdsBefore = count("reactive.lock.held");
        double observedBefore = count("reactive.lock?tag=outcome:success");

        String sku = new Sales(web).newSku(1);
        web.post().uri("/skus/{sku}/purchase", sku).exchange().expectStatus().isCreated();

        assertThat(count("reactive.lock.acquire?tag=outcome:acquired")).isEqualTo(waitsBefore + 1);
        assertThat(count("reactive.lock.held")).isEqualTo(holdsBefore + 1);
        assertThat(count("reactive.lock?tag=outcome:success")).isEqualTo(observedBefore + 1);
        Metric acquire = metric("reactive.lock.acquire");
        assertThat(acquire.measurements()).extracting(Measurement::statistic).contains("COUNT", "TOTAL_TIME", "MAX");
        assertThat(acquire.availableTags()).extracting(Tag::tag).containsExactlyInAnyOrder("primitive", "outcome");
        assertThat(metric("reactive.lock.holders").measurements()).singleElement()
                .satisfies(m -> assertThat(m.value()).as("no lock held once the purchase answered").isZero());
    }

    @Test
    @DisplayName("/actuator/metrics lists the lock's meters under the names the README gives, each prefixed once")
    void theLockMetersAreListedUnderTheDocumentedNames() {
        String sku = new Sales(web).newSku(1);
        web.post().uri("/skus/{sku}/purchase", sku).exchange().expectStatus().isCreated();

        List<String> lockMeters = web.get().uri("/actuator/metrics").exchange()
                .expectStatus().isOk()
                .expectBody(MetricNames.class).returnResult().getResponseBody()
                .names().stream().filter(name -> name.startsWith("reactive.lock")).toList();
        // LockMetrics' meters, and those Spring Boot's observation handler derives from the
        // observation "reactive.lock": its timer, its long task timer (.active) and a counter per
        // event (.acquired). Renewals, losses and hand-offs appear once one happened (other tests cause some).
        // The example app publishes p50/p99 of the wait for its /locks page (.acquire.percentile).
        assertThat(lockMeters)
                .contains("reactive.lock", "reactive.lock.active", "reactive.lock.acquired",
                        "reactive.lock.acquire", "reactive.lock.held", "reactive.lock.holders")
                .allMatch(name -> List.of("reactive.lock", "reactive.lock.active", "reactive.lock.acquired",
                        "reactive.lock.acquire", "reactive.lock.held", "reactive.lock.holders",
                        "reactive.lock.renewals", "reactive.lock.lost", "reactive.lock.handoffs",
                        "reactive.lock.acquire.percentile").contains(name),
                        "a documented name");
    }

    /** The COUNT of a timer, 0 when it was never recorded (the endpoint then answers 404). */
    private double count(String metricAndTags) {
        var exchange = web.get().uri("/actuator/metrics/" + metricAndTags).exchange();
        var result = exchange.expectBody(Metric.class).returnResult();
        if (result.getStatus() == HttpStatus.NOT_FOUND) {
            return 0;
        }
        assertThat(result.getStatus()).isEqualTo(HttpStatus.OK);
        return result.getResponseBody().measurements().stream()
                .filter(m -> m.statistic().equals("COUNT")).findFirst().orElseThrow().value();
    }

    private Metric metric(String name) {
        return web.get().uri("/actuator/metrics/" + name).exchange()
                .expectStatus().isOk()
                .expectBody(Metric.class).returnResult().getResponseBody();
    }

    record MetricNames(List<String> names) {}

    @JsonIgnoreProperties(ignoreUnknown = true)
    record Metric(String name, List<Measurement> measurements, List<Tag> availableTags) {}

    record Measurement(String statistic, double value) {}

    @JsonIgnoreProperties(ignoreUnknown = true)
    record Tag(String tag, List<String> values) {}
}
