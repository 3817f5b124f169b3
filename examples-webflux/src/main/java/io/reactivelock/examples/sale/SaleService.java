package io.reactivelock.examples.sale;

import io.reactivelock.ReactiveLock;
import io.reactivelock.examples.ExampleProperties;
import java.time.Duration;
import org.springframework.stereotype.Service;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The flash sale: many buyers, little stock, no overselling.
 *
 * <p>A purchase reads the stock, charges the customer (a remote call), then writes the order and
 * the new stock. Two buyers who both read "1 left" before either writes would both be sold the
 * last unit, so the read-charge-write runs under the lock {@code "sale:" + sku}: one buyer of a
 * SKU at a time, across every instance of the app. The write carries the lease's fencing token,
 * so that the database refuses a holder whose lease ran out in the meantime.
 */
@Service
public class SaleService {

    private final ReactiveLock locks;
    private final Inventory inventory;
    private final PaymentGateway payments;
    private final Duration lockTtl;
    private final boolean lockEnabled;

    public SaleService(ReactiveLock locks, Inventory inventory, PaymentGateway payments, ExampleProperties properties) {
        this.locks = locks;
        this.inventory = inventory;
        this.payments = payments;
        this.lockTtl = properties.sale().lockTtl();
        this.lockEnabled = properties.lock().enabled();
    }

    public Mono<Sku> create(String sku, int stock) {
        return inventory.create(sku, stock);
    }

    public Mono<Sku> find(String sku) {
        return inventory.find(sku).switchIfEmpty(Mono.error(() -> new SkuNotFoundException(sku)));
    }

    public Flux<Order> orders(String sku) {
        return find(sku).thenMany(inventory.orders(sku));
    }

    /** Adds stock. It writes the row the sale writes, so it takes the same lock and fences too. */
    public Mono<Sku> restock(String sku, int quantity) {
        return locks.withLock(lockName(sku), lockTtl, lease -> inventory.restock(sku, quantity, lease.fencingToken()));
    }

    /**
     * Buys one unit of {@code sku}. Fails with {@link SkuNotFoundException}, {@link SoldOutException},
     * {@link io.reactivelock.LockAcquisitionException} (the SKU stayed busy for the whole acquire
     * timeout), {@link io.reactivelock.LockLostException} or {@link StaleLockHolderException}.
     */
    public Mono<Order> purchase(String sku) {
        // Fast path, without the lock: once a SKU is sold out, buyers are turned away without
        // queueing for its lock. Stock only goes up through restock, so "0" read here is safe to
        // answer; "some left" is not, and is checked again under the lock.
        return inStock(sku).then(lockEnabled
                ? locks.withLock(lockName(sku), lockTtl, lease -> buyOne(sku, lease.fencingToken()))
                : buyOneWithoutLock(sku));
    }

    /** Under the lock: read, charge, write. */
    private Mono<Order> buyOne(String sku, long fence) {
        return inStock(sku)
                .then(payments.charge(sku))
                // A real shop would void the payment if this write fails (stale holder, lost lease).
                .flatMap(payment -> inventory.recordPurchase(sku, fence, payment));
    }

    /** The same steps without a lock: only for the negative-control test (example.lock.enabled=false). */
    private Mono<Order> buyOneWithoutLock(String sku) {
        return inStock(sku)
                .then(payments.charge(sku))
                .flatMap(payment -> inventory.recordPurchaseWithoutLock(sku, payment));
    }

    private Mono<Sku> inStock(String sku) {
        return find(sku).filter(found -> found.stock() > 0).switchIfEmpty(Mono.error(() -> new SoldOutException(sku)));
    }

    private static String lockName(String sku) {
        return "sale:" + sku;
    }
}
