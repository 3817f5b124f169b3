package io.reactivelock.examples.sale;

import io.reactivelock.examples.web.Requests;
import java.net.URI;
import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

@RestController
@RequestMapping("/skus")
class SaleController {

    static final int MAX_QUANTITY = 1_000_000;

    private final SaleService sales;

    SaleController(SaleService sales) {
        this.sales = sales;
    }

    /** {@code {"sku": "tee-42", "stock": 50}}: 201, or 409 if it exists. */
    @PostMapping
    Mono<ResponseEntity<Sku>> create(@RequestBody NewSku body) {
        String sku = Requests.checkId("sku", body.sku());
        int stock = Requests.checkRange("stock", body.stock(), 0, MAX_QUANTITY);
        return sales.create(sku, stock).map(created -> ResponseEntity.created(URI.create("/skus/" + sku)).body(created));
    }

    @GetMapping("/{sku}")
    Mono<Sku> find(@PathVariable String sku) {
        return sales.find(Requests.checkId("sku", sku));
    }

    /** {@code {"quantity": 10}}: adds stock, under the SKU's lock. */
    @PostMapping("/{sku}/restock")
    Mono<Sku> restock(@PathVariable String sku, @RequestBody Restock body) {
        String id = Requests.checkId("sku", sku);
        int quantity = Requests.checkRange("quantity", body.quantity(), 1, MAX_QUANTITY);
        return sales.restock(id, quantity);
    }

    /** Buys one unit: 201 with the order; 409 sold out; 404 unknown; 503 + Retry-After when too busy. */
    @PostMapping("/{sku}/purchase")
    @ResponseStatus(HttpStatus.CREATED)
    Mono<Order> purchase(@PathVariable String sku) {
        return sales.purchase(Requests.checkId("sku", sku));
    }

    @GetMapping("/{sku}/orders")
    Flux<Order> orders(@PathVariable String sku) {
        return sales.orders(Requests.checkId("sku", sku));
    }

    record NewSku(@Nullable String sku, @Nullable Integer stock) {}

    record Restock(@Nullable Integer quantity) {}
}
