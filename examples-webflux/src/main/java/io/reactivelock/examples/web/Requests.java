package io.reactivelock.examples.web;

import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/** Input checks shared by the controllers; each failure is an {@link InvalidRequestException} (400). */
public final class Requests {

    private static final Pattern ID = Pattern.compile("[A-Za-z0-9_-]{1,64}");

    private Requests() {}

    /** An id (SKU, report): 1 to 64 letters, digits, '-' or '_'. */
    public static String checkId(String field, @Nullable String value) {
        if (value == null || !ID.matcher(value).matches()) {
            throw new InvalidRequestException(field, "must be 1 to 64 letters, digits, '-' or '_'");
        }
        return value;
    }

    /** A number present and within [min, max]. */
    public static int checkRange(String field, @Nullable Integer value, int min, int max) {
        if (value == null) {
            throw new InvalidRequestException(field, "is required");
        }
        if (value < min || value > max) {
            throw new InvalidRequestException(field, "must be between " + min + " and " + max);
        }
        return value;
    }
}
