package io.reactivelock.examples.sale;

/**
 * A product on sale.
 *
 * @param sku its identifier
 * @param stock units left
 * @param lastFence the highest fencing token the database has accepted a write with for this SKU
 */
public record Sku(String sku, int stock, long lastFence) {}
