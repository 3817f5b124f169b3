package io.reactivelock.internal;

import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;

/**
 * Ownership tokens: 128 bits from a {@link SecureRandom}, as 32 lowercase hex digits.
 *
 * <p>The generator is the JDK's DRBG (NIST SP 800-90A), not the platform default: on Linux the
 * default ({@code NativePRNG}) reads {@code /dev/urandom} through a file stream for every token,
 * which is blocking I/O on whatever reactive thread subscribes. DRBG reads the OS entropy source
 * once, to seed itself, which {@link #seed()} makes happen at start-up. Each thread draws 32
 * tokens' bytes at a time and wipes each token's bytes once it is made: a DRBG call has a fixed
 * cost of several hashes, which one per token made it a twentieth of an uncontended pair's CPU.
 */
public final class Tokens {

    private static final SecureRandom RANDOM = drbg();
    private static final char[] HEX = "0123456789abcdef".toCharArray();
    private static final int BYTES = 16;
    private static final int BATCH = 32;
    private static final ThreadLocal<Batch> BATCHES = ThreadLocal.withInitial(Batch::new);

    private Tokens() {}

    /** Seeds the generator now; call where blocking is allowed (creating a lock instance). */
    public static void seed() {
        RANDOM.nextBytes(new byte[16]);
    }

    /** A new token; each acquisition draws its own. */
    public static String next() {
        Batch batch = BATCHES.get();
        if (batch.next == BATCH) {
            RANDOM.nextBytes(batch.bytes);
            batch.next = 0;
        }
        byte[] bytes = batch.bytes;
        int from = BYTES * batch.next++;
        char[] out = new char[2 * BYTES];
        for (int i = 0; i < BYTES; i++) {
            byte b = bytes[from + i];
            out[2 * i] = HEX[(b >> 4) & 0xF];
            out[2 * i + 1] = HEX[b & 0xF];
            bytes[from + i] = 0;
        }
        return new String(out);
    }

    /** One thread's bytes drawn ahead: {@code next} is the index of the next unused token. */
    private static final class Batch {
        final byte[] bytes = new byte[BYTES * BATCH];
        int next = BATCH;
    }

    private static SecureRandom drbg() {
        try {
            return SecureRandom.getInstance("DRBG");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("The DRBG SecureRandom is part of every JDK since 9", e);
        }
    }
}
