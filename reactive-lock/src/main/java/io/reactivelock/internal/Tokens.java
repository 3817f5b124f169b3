package io.reactivelock.internal;

import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;

/**
 * Ownership tokens: 128 bits from a {@link SecureRandom}, as 32 lowercase hex digits.
 *
 * <p>The generator is the JDK's DRBG (NIST SP 800-90A), not the platform default: on Linux the
 * default ({@code NativePRNG}) reads {@code /dev/urandom} through a file stream for every token,
 * which is blocking I/O on whatever reactive thread subscribes. DRBG reads the OS entropy source
 * once, to seed itself, which {@link #seed()} makes happen at start-up. Tokens' bytes are drawn
 * 32 tokens at a time, and each token's bytes are wiped once it is made: a DRBG call has a fixed
 * cost of several hashes, which one per token made it a twentieth of an uncontended pair's CPU.
 * The draw is under a monitor, as the DRBG's own calls are; nothing waits in it but for a draw.
 */
public final class Tokens {

    private static final SecureRandom RANDOM = drbg();
    private static final char[] HEX = "0123456789abcdef".toCharArray();
    private static final int BYTES = 16;
    private static final int BATCH = 32;
    /** Tokens' bytes drawn ahead; guarded by itself. */
    private static final byte[] AHEAD = new byte[BYTES * BATCH];
    /** How many tokens of {@link #AHEAD} were used; guarded by {@code AHEAD}. */
    private static int taken = BATCH;

    private Tokens() {}

    /** Seeds the generator now; call where blocking is allowed (creating a lock instance). */
    public static void seed() {
        RANDOM.nextBytes(new byte[16]);
    }

    /** A new token; each acquisition draws its own. */
    public static String next() {
        char[] out = new char[2 * BYTES];
        synchronized (AHEAD) {
            if (taken == BATCH) {
                RANDOM.nextBytes(AHEAD);
                taken = 0;
            }
            int from = BYTES * taken++;
            for (int i = 0; i < BYTES; i++) {
                byte b = AHEAD[from + i];
                out[2 * i] = HEX[(b >> 4) & 0xF];
                out[2 * i + 1] = HEX[b & 0xF];
                AHEAD[from + i] = 0;
            }
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
