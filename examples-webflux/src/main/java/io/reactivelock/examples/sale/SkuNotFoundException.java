package io.reactivelock.examples.sale;

/** No SKU with this id: 404. */
public final class SkuNotFoundException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    public SkuNotFoundException(String sku) {
        super("There is no SKU '" + sku + "'");
    }
}
