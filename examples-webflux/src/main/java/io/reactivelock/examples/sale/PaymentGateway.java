package io.reactivelock.examples.sale;

import io.reactivelock.examples.ExampleProperties;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import org.springframework.stereotype.Component;
import reactor.core.publisher.Mono;

/**
 * Stands for a remote payment provider: answers after {@code example.sale.payment-latency}, on a
 * timer thread. It is why a purchase cannot be one SQL statement or one short transaction: the
 * stock is read, then the customer is charged (remotely, asynchronously), then the order is written.
 */
@Component
public class PaymentGateway {

    private final Duration latency;

    public PaymentGateway(ExampleProperties properties) {
        this.latency = properties.sale().paymentLatency();
    }

    /** Charges one unit of {@code sku}; emits the payment reference. */
    public Mono<String> charge(String sku) {
        // ThreadLocalRandom, not UUID.randomUUID(): SecureRandom may read /dev/urandom, a blocking call.
        return Mono.delay(latency).map(tick -> "pay_" + Long.toHexString(ThreadLocalRandom.current().nextLong()));
    }
}
