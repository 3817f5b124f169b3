package io.reactivelock.examples.sale;

/** The SKU has no stock left: 409. */
public final class SoldOutException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    public SoldOutException(String sku) {
        super("SKU '" + sku + "' is sold out", null, false, false);
    }
}
