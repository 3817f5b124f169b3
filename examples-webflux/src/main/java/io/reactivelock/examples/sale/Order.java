package io.reactivelock.examples.sale;

import java.time.OffsetDateTime;

/**
 * One unit sold.
 *
 * @param id database id
 * @param sku what was bought
 * @param fence the fencing token of the lock lease the order was written under (0: written
 *     without a lock, which only the negative-control test does)
 * @param payment the payment provider's reference
 * @param createdAt when the order was written
 */
public record Order(long id, String sku, long fence, String payment, OffsetDateTime createdAt) {}
