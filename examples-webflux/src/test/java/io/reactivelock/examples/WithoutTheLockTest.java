package io.reactivelock.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.examples.report.ReportService;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.webtestclient.autoconfigure.AutoConfigureWebTestClient;
import org.springframework.http.HttpMethod;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * Negative controls: the same loads as {@link FlashSaleTest} and {@link ReportStampedeTest} with
 * the lock switched off. They go wrong, which shows that those tests can fail, and that it is the
 * lock that makes them pass.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT, properties = "example.lock.enabled=false")
@AutoConfigureWebTestClient
class WithoutTheLockTest {

    @Autowired
    WebTestClient web;

    @LocalServerPort
    int port;

    @Autowired
    ReportService reports;

    Sales sales;

    @BeforeEach
    void setUp() {
        sales = new Sales(web);
    }

    @Test
    @DisplayName("without the lock, 200 concurrent purchases of a SKU with stock 50 oversell it")
    void withoutTheLockTheSaleOversells() {
        String sku = sales.newSku(50);

        List<Answer> answers = Concurrently.send(port, 200, HttpMethod.POST, "/skus/" + sku + "/purchase");

        long sold = answers.stream().filter(answer -> answer.status() == 201).count();
        assertThat(sold).isGreaterThan(50);
        assertThat(sales.orders(sku)).hasSize((int) sold);
        assertThat(sales.sku(sku).stock()).isNegative();
    }

    @Test
    @DisplayName("without the lock, 100 concurrent requests for an uncached report compute it more than once")
    void withoutTheLockTheReportIsComputedManyTimes() {
        String id = "q-" + UUID.randomUUID().toString().substring(0, 8);
        long before = reports.computations();

        Concurrently.send(port, 100, HttpMethod.GET, "/reports/" + id);

        assertThat(reports.computations() - before).isGreaterThan(1);
    }
}
