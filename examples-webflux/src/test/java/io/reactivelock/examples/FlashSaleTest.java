package io.reactivelock.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reactivelock.ReactiveLock;
import io.reactivelock.examples.sale.Inventory;
import io.reactivelock.examples.sale.Order;
import io.reactivelock.examples.sale.StaleLockHolderException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.HttpMethod;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;
import reactor.core.publisher.Mono;

@ExampleAppTest
class FlashSaleTest {

    @Autowired
    WebTestClient web;

    @LocalServerPort
    int port;

    @Autowired
    ReactiveLock locks;

    @Autowired
    Inventory inventory;

    Sales sales;

    @BeforeEach
    void setUp() {
        sales = new Sales(web);
    }

    @Test
    @DisplayName("200 concurrent purchases of a SKU with stock 50 make exactly 50 orders, leave stock 0, and turn the other 150 away with 409 sold out")
    void concurrentBuyersNeverOversell() {
        String sku = sales.newSku(50);

        List<Answer> answers = Concurrently.send(port, 200, HttpMethod.POST, "/skus/" + sku + "/purchase");

        Map<Integer, Long> byStatus = answers.stream().collect(Collectors.groupingBy(Answer::status, Collectors.counting()));
        assertThat(byStatus).containsOnlyKeys(201, 409).containsEntry(201, 50L).containsEntry(409, 150L);
        assertThat(answers).filteredOn(answer -> answer.status() == 409)
                .allSatisfy(answer -> assertThat(answer.body()).contains("\"type\":\"https://example.org/problems/sold-out\""));
        assertThat(sales.sku(sku).stock()).isZero();
        List<Order> orders = sales.orders(sku);
        assertThat(orders).hasSize(50);
        // Written one holder after the other: in the order of the orders, each fence is higher.
        assertThat(orders).extracting(Order::fence).isSorted().doesNotHaveDuplicates();
        assertThat(sales.sku(sku).lastFence()).isEqualTo(orders.get(49).fence());
    }

    @Test
    @DisplayName("the database rejects a write whose fencing token is below the last one applied, and writes nothing")
    void staleLockHolderIsRejectedByTheDatabase() {
        String sku = sales.newSku(5);
        // A holder takes the SKU's lock and keeps its fencing token; its lease then ends (here:
        // it finishes; in real life: it paused past its TTL, or Redis lost the key).
        long staleFence = locks.withLock("sale:" + sku, Duration.ofSeconds(5), lease -> Mono.just(lease.fencingToken()))
                .block();
        // A newer holder buys one through the API.
        web.post().uri("/skus/{sku}/purchase", sku).exchange().expectStatus().isCreated();

        // The stale holder wakes up and writes with its old token.
        assertThatThrownBy(() -> inventory.recordPurchase(sku, staleFence, "pay_stale").block())
                .isInstanceOfSatisfying(StaleLockHolderException.class, e -> {
                    assertThat(e.fence()).isEqualTo(staleFence);
                    assertThat(e.lastFence()).isGreaterThan(staleFence);
                });
        assertThat(sales.sku(sku).stock()).isEqualTo(4);
        assertThat(sales.orders(sku)).extracting(Order::payment).doesNotContain("pay_stale").hasSize(1);
    }

    @Test
    @DisplayName("restocking takes the SKU's lock and fences its write like a sale")
    void restockIsFenced() {
        String sku = sales.newSku(0);
        web.post().uri("/skus/{sku}/purchase", sku).exchange().expectStatus().isEqualTo(409);

        web.post().uri("/skus/{sku}/restock", sku).contentType(MediaType.APPLICATION_JSON)
                .bodyValue(Map.of("quantity", 2))
                .exchange()
                .expectStatus().isOk()
                .expectBody().jsonPath("$.stock").isEqualTo(2).jsonPath("$.lastFence").value(fence ->
                        assertThat(((Number) fence).longValue()).isPositive());
        web.post().uri("/skus/{sku}/purchase", sku).exchange().expectStatus().isCreated();
        assertThat(sales.sku(sku).stock()).isEqualTo(1);
    }
}
