package io.reactivelock.examples.docs;

import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * What the snippets of README.md and docs/ take for granted of the application around them: its
 * services, values and types. Nothing here is of the library: every library API a snippet names is
 * the real one, so {@link JavaSnippetsTest} fails when it does not exist. The snippets' classes extend
 * this one, so a snippet may use these names as it would its own application's.
 */
@SuppressWarnings("unused")
public abstract class SnippetContext {

    // --- values a snippet works on
    protected final String orderId = "42";
    protected final String order = "42";
    protected final String sku = "tee-42";
    protected final String customer = "acme";
    protected final String from = "alice";
    protected final String to = "bob";
    protected final long amount = 100;
    protected final boolean large = false;
    protected final Duration ttl = Duration.ofSeconds(10);
    protected final Logger log = LoggerFactory.getLogger("snippet");

    /** The application's trust in its Redis servers' CA (docs/security.md). */
    protected javax.net.ssl.TrustManagerFactory trustManagerFactory() {
        return null;
    }

    // --- the application's services
    protected final Payments payments = id -> Mono.just(new Charge(id));
    protected final Orders orders = new Orders();
    protected final Reports reports = new Reports();
    protected final Catalog catalog = new Catalog();
    protected final Exporter exporter = job -> Mono.just(new Report(job));
    protected final Ledger ledger = (a, b, amount, fenceA, fenceB) -> Mono.just(new Receipt(a + b));
    protected final Invoices invoices = customer -> Flux.empty();
    protected final Feed feed = name -> Flux.empty();

    // --- the application's types
    public record Charge(String id) {}

    public record Receipt(String id) {}

    public record Order(String id, String sku) {}

    public record Report(String id) {}

    public record Invoice(String id) {}

    public record Price(String sku, long cents) {}

    public record Page(int number) {}

    public interface Payments {
        Mono<Charge> charge(String orderId);
    }

    public static class Orders {
        public Mono<Receipt> markPaid(String orderId, Charge charge, long fencingToken) {
            return Mono.just(new Receipt(orderId));
        }

        public Mono<Order> place(String sku) {
            return Mono.just(new Order("1", sku));
        }

        public Mono<Order> place(String sku, long fencingToken) {
            return Mono.just(new Order("1", sku));
        }
    }

    public static class Reports {
        public Mono<Report> build(String id) {
            return Mono.just(new Report(id));
        }

        public Mono<Report> build(long term) {
            return Mono.just(new Report(Long.toString(term)));
        }

        public Mono<Void> refreshAll() {
            return Mono.empty();
        }

        public Mono<Void> save(Report report, long fencingToken) {
            return Mono.empty();
        }
    }

    public static class Catalog {
        public Mono<Price> price(String sku) {
            return Mono.just(new Price(sku, 100));
        }

        public Mono<Void> reprice(List<String> rules, long fencingToken) {
            return Mono.empty();
        }
    }

    protected final List<String> rules = List.of("summer-sale");

    public interface Exporter {
        Mono<Report> run(String job);
    }

    protected final String job = "export-7";

    public interface Ledger {
        Mono<Receipt> transfer(String from, String to, long amount, long fenceFrom, long fenceTo);
    }

    public interface Invoices {
        Flux<Invoice> findByCustomer(String customer);
    }

    public interface Feed {
        Flux<Page> pages(String name);
    }
}
