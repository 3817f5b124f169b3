package io.reactivelock.internal;

import java.security.SecureRandom;

/** Ownership tokens: 128 bits from {@link SecureRandom}, as 32 lowercase hex digits. */
public final class Tokens {

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private Tokens() {}

    /** A new token; each acquisition draws its own. */
    public static String next() {
        byte[] bytes = new byte[16];
        RANDOM.nextBytes(bytes);
        char[] out = new char[32];
        for (int i = 0; i < 16; i++) {
            out[2 * i] = HEX[(bytes[i] >> 4) & 0xF];
            out[2 * i + 1] = HEX[bytes[i] & 0xF];
        }
        return new String(out);
    }
}
