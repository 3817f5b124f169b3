package io.reactivelock.examples.web;

/** A request whose input breaks a rule: 400. */
public final class InvalidRequestException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final String field;

    public InvalidRequestException(String field, String message) {
        super(field + " " + message);
        this.field = field;
    }

    /** The offending field or path variable. */
    public String field() {
        return field;
    }
}
