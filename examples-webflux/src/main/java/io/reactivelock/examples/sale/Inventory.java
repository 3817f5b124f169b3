package io.reactivelock.examples.sale;

import io.r2dbc.spi.Readable;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.stereotype.Repository;
import org.springframework.transaction.reactive.TransactionalOperator;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * SKUs and orders in the database, through R2DBC.
 *
 * <p>Every write that the lock protects carries the lease's fencing token and is applied only if
 * the token is above the last one the row accepted ({@code last_fence}). A holder that lost its
 * lease (paused past its TTL; Redis lost the key) and comes back after a newer holder wrote is
 * refused by the database itself, whatever the lock believed.
 *
 * <p><b>Threads.</b> The default database is H2 in memory through r2dbc-h2, and r2dbc-h2 is not a
 * network driver: it runs H2's embedded engine, which blocks (it waits for row and table locks,
 * and BlockHound catches it doing so), on whichever thread subscribes. So every call here is
 * subscribed and cancelled on {@link Schedulers#boundedElastic()}, never on an event loop, and
 * emits its result there. With a truly non-blocking driver (r2dbc-postgresql, ...) that hop costs
 * little and may be dropped.
 */
@Repository
public class Inventory {

    private static final Scheduler DATABASE = Schedulers.boundedElastic();

    private final DatabaseClient db;
    private final TransactionalOperator transactions;

    public Inventory(DatabaseClient db, TransactionalOperator transactions) {
        this.db = db;
        this.transactions = transactions;
    }

    /** A new SKU; fails with {@link SkuAlreadyExistsException} if the id is taken. */
    public Mono<Sku> create(String sku, int stock) {
        Mono<Sku> insert = db.sql("INSERT INTO sku (sku, stock, last_fence) VALUES (:sku, :stock, 0)")
                .bind("sku", sku)
                .bind("stock", stock)
                .then()
                .onErrorMap(DuplicateKeyException.class, e -> new SkuAlreadyExistsException(sku, e))
                .then(Mono.fromSupplier(() -> new Sku(sku, stock, 0)));
        return onDatabaseThread(insert);
    }

    /** The SKU, or empty when there is none. */
    public Mono<Sku> find(String sku) {
        return onDatabaseThread(select(sku));
    }

    /** The orders of a SKU, oldest first. */
    public Flux<Order> orders(String sku) {
        return db.sql("SELECT id, sku, fence, payment, created_at FROM orders WHERE sku = :sku ORDER BY id")
                .bind("sku", sku)
                .map(Inventory::order)
                .all()
                .subscribeOn(DATABASE)
                .cancelOn(DATABASE);
    }

    /** Adds stock, under the lock of the SKU: {@code fence} is that lease's fencing token. */
    public Mono<Sku> restock(String sku, int quantity, long fence) {
        Mono<Sku> write = db.sql("""
                        UPDATE sku SET stock = stock + :quantity, last_fence = :fence
                        WHERE sku = :sku AND last_fence < :fence""")
                .bind("quantity", quantity)
                .bind("fence", fence)
                .bind("sku", sku)
                .fetch()
                .rowsUpdated()
                .flatMap(updated -> updated == 1 ? select(sku) : rejected(sku, fence));
        return onDatabaseThread(transactions.transactional(write));
    }

    /**
     * Sells one unit: decrements the stock and writes the order, in one transaction, only if
     * {@code fence} (the lease's fencing token) is above the last token applied to the SKU.
     * Otherwise nothing is written and it fails with {@link StaleLockHolderException}.
     *
     * <p>It does not check the stock: the caller did, under the lock, and nobody else can change
     * it while the lock is held (all writers go through the lock, and the fence stops the others).
     */
    public Mono<Order> recordPurchase(String sku, long fence, String payment) {
        Mono<Order> write = db.sql("""
                        UPDATE sku SET stock = stock - 1, last_fence = :fence
                        WHERE sku = :sku AND last_fence < :fence""")
                .bind("fence", fence)
                .bind("sku", sku)
                .fetch()
                .rowsUpdated()
                .flatMap(updated -> updated == 1 ? insertOrder(sku, fence, payment) : rejected(sku, fence));
        return onDatabaseThread(transactions.transactional(write));
    }

    /**
     * What {@link #recordPurchase} looks like without a lock, hence without a fencing token. Used
     * only when {@code example.lock.enabled=false}, for the negative-control test.
     */
    public Mono<Order> recordPurchaseWithoutLock(String sku, String payment) {
        Mono<Order> write = db.sql("UPDATE sku SET stock = stock - 1 WHERE sku = :sku")
                .bind("sku", sku)
                .fetch()
                .rowsUpdated()
                .flatMap(updated -> updated == 1 ? insertOrder(sku, 0, payment) : Mono.error(new SkuNotFoundException(sku)));
        return onDatabaseThread(transactions.transactional(write));
    }

    private Mono<Sku> select(String sku) {
        return db.sql("SELECT sku, stock, last_fence FROM sku WHERE sku = :sku")
                .bind("sku", sku)
                .map(row -> new Sku(row.get("sku", String.class), row.get("stock", Integer.class),
                        row.get("last_fence", Long.class)))
                .one();
    }

    private Mono<Order> insertOrder(String sku, long fence, String payment) {
        OffsetDateTime now = OffsetDateTime.now(ZoneOffset.UTC).truncatedTo(ChronoUnit.MICROS); // what the column keeps
        return db.sql("INSERT INTO orders (sku, fence, payment, created_at) VALUES (:sku, :fence, :payment, :createdAt)")
                .bind("sku", sku)
                .bind("fence", fence)
                .bind("payment", payment)
                .bind("createdAt", now)
                .filter(statement -> statement.returnGeneratedValues("id"))
                .map(row -> new Order(row.get("id", Long.class), sku, fence, payment, now))
                .one();
    }

    /** Zero rows updated: an unknown SKU, or a token that is not above the last one applied. */
    private <T> Mono<T> rejected(String sku, long fence) {
        return select(sku)
                .switchIfEmpty(Mono.error(() -> new SkuNotFoundException(sku)))
                .flatMap(current -> Mono.error(new StaleLockHolderException(sku, fence, current.lastFence())));
    }

    private static Order order(Readable row) {
        return new Order(row.get("id", Long.class), row.get("sku", String.class), row.get("fence", Long.class),
                row.get("payment", String.class), row.get("created_at", OffsetDateTime.class));
    }

    private static <T> Mono<T> onDatabaseThread(Mono<T> work) {
        return work.subscribeOn(DATABASE).cancelOn(DATABASE);
    }
}
