package io.reactivelock.examples.sale;

/** Creating a SKU whose id is taken: 409. */
public final class SkuAlreadyExistsException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    public SkuAlreadyExistsException(String sku, Throwable cause) {
        super("SKU '" + sku + "' already exists; restock it instead", cause);
    }
}
