package io.reactivelock.internal;

import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;

/**
 * Ownership tokens: 128 bits from a {@link SecureRandom}, as 32 lowercase hex digits.
 *
 * <p>The generator is the JDK's DRBG (NIST SP 800-90A), not the platform default: on Linux the
 * default ({@code NativePRNG}) reads {@code /dev/urandom} through a file stream for every token,
 * which is blocking I/O on whatever reactive thread subscribes. DRBG reads the OS entropy source
 * once, to seed itself, which {@link #seed()} makes happen at start-up.
 */
public final class Tokens {

    private static final SecureRandom RANDOM = drbg();
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private Tokens() {}

    /** Seeds the generator now; call where blocking is allowed (creating a lock instance). */
    public static void seed() {
        RANDOM.nextBytes(new byte[16]);
    }

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

    private static SecureRandom drbg() {
        try {
            return SecureRandom.getInstance("DRBG");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("The DRBG SecureRandom is part of every JDK since 9", e);
        }
    }
}
