package io.reactivelock.examples;

import io.reactivelock.examples.sale.Order;
import io.reactivelock.examples.sale.Sku;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;

/** Test steps on the sale's HTTP API. */
final class Sales {

    private final WebTestClient web;

    Sales(WebTestClient web) {
        this.web = web;
    }

    /** A new SKU with a unique id (tests share one database). */
    String newSku(int stock) {
        String sku = "sku-" + UUID.randomUUID().toString().substring(0, 8);
        web.post().uri("/skus")
                .contentType(MediaType.APPLICATION_JSON)
                .bodyValue(Map.of("sku", sku, "stock", stock))
                .exchange()
                .expectStatus().isCreated();
        return sku;
    }

    Sku sku(String sku) {
        return web.get().uri("/skus/{sku}", sku).exchange()
                .expectStatus().isOk()
                .expectBody(Sku.class).returnResult().getResponseBody();
    }

    List<Order> orders(String sku) {
        return web.get().uri("/skus/{sku}/orders", sku).exchange()
                .expectStatus().isOk()
                .expectBodyList(Order.class).returnResult().getResponseBody();
    }
}
