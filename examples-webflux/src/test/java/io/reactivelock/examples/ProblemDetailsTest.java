package io.reactivelock.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;

@ExampleAppTest
class ProblemDetailsTest {

    @Autowired
    WebTestClient web;

    Sales sales;

    @BeforeEach
    void setUp() {
        sales = new Sales(web);
    }

    @Test
    @DisplayName("buying an unknown SKU answers 404 with a problem document")
    void unknownSku() {
        web.post().uri("/skus/{sku}/purchase", "no-such-sku").exchange()
                .expectStatus().isNotFound()
                .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON)
                .expectBody()
                .jsonPath("$.type").isEqualTo("https://example.org/problems/sku-not-found")
                .jsonPath("$.status").isEqualTo(404)
                .jsonPath("$.instance").isEqualTo("/skus/no-such-sku/purchase");
    }

    @Test
    @DisplayName("buying a sold-out SKU answers 409 sold-out")
    void soldOut() {
        String sku = sales.newSku(0);
        web.post().uri("/skus/{sku}/purchase", sku).exchange()
                .expectStatus().isEqualTo(409)
                .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON)
                .expectBody().jsonPath("$.type").isEqualTo("https://example.org/problems/sold-out");
    }

    @Test
    @DisplayName("an invalid SKU id, a missing field or an out-of-range quantity answers 400 naming the field")
    void validation() {
        web.post().uri("/skus/{sku}/purchase", "not a valid id!").exchange()
                .expectStatus().isBadRequest()
                .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON)
                .expectBody().jsonPath("$.type").isEqualTo("https://example.org/problems/invalid-request")
                .jsonPath("$.field").isEqualTo("sku");
        web.post().uri("/skus").contentType(MediaType.APPLICATION_JSON).bodyValue(Map.of("sku", "no-stock-given"))
                .exchange()
                .expectStatus().isBadRequest()
                .expectBody().jsonPath("$.field").isEqualTo("stock");
        String sku = sales.newSku(1);
        web.post().uri("/skus/{sku}/restock", sku).contentType(MediaType.APPLICATION_JSON)
                .bodyValue(Map.of("quantity", -3))
                .exchange()
                .expectStatus().isBadRequest()
                .expectBody().jsonPath("$.field").isEqualTo("quantity");
    }

    @Test
    @DisplayName("a quantity given as 1.5 or as the string \"5\" answers 400 naming the field, and nothing is created or restocked")
    void quantitiesMustBeJsonIntegers() {
        for (String stock : List.of("1.5", "\"5\"")) {
            String sku = "strict-" + UUID.randomUUID().toString().substring(0, 8);
            web.post().uri("/skus").contentType(MediaType.APPLICATION_JSON)
                    .bodyValue("{\"sku\": \"" + sku + "\", \"stock\": " + stock + "}")
                    .exchange()
                    .expectStatus().isBadRequest()
                    .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON)
                    .expectBody()
                    .jsonPath("$.type").isEqualTo("https://example.org/problems/invalid-request")
                    .jsonPath("$.field").isEqualTo("stock")
                    .jsonPath("$.detail").isEqualTo("stock must be a JSON integer")
                    .jsonPath("$.status").isEqualTo(400)
                    .jsonPath("$.instance").isEqualTo("/skus");
            web.get().uri("/skus/{sku}", sku).exchange().expectStatus().isNotFound();
        }
        String sku = sales.newSku(1);
        web.post().uri("/skus/{sku}/restock", sku).contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{\"quantity\": 2.5}")
                .exchange()
                .expectStatus().isBadRequest()
                .expectBody().jsonPath("$.field").isEqualTo("quantity");
        assertThat(sales.sku(sku).stock()).isEqualTo(1);
    }

    @Test
    @DisplayName("a body that is not JSON answers 400 with a problem document")
    void malformedBody() {
        web.post().uri("/skus").contentType(MediaType.APPLICATION_JSON).bodyValue("{\"sku\": ")
                .exchange()
                .expectStatus().isBadRequest()
                .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON)
                .expectBody().jsonPath("$.status").isEqualTo(400);
    }

    @Test
    @DisplayName("creating a SKU that exists answers 409 sku-exists")
    void duplicateSku() {
        String sku = sales.newSku(1);
        web.post().uri("/skus").contentType(MediaType.APPLICATION_JSON).bodyValue(Map.of("sku", sku, "stock", 3))
                .exchange()
                .expectStatus().isEqualTo(409)
                .expectBody().jsonPath("$.type").isEqualTo("https://example.org/problems/sku-exists");
    }
}
