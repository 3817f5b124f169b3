package io.reactivelock.spi;

import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Ownership tokens: 128 bits from a {@link SecureRandom}, as {@value #LENGTH} lowercase hex
 * digits, optionally followed by an address that says where notices for the token go.
 *
 * <p>The generator is the JDK's DRBG (NIST SP 800-90A), not the platform default: on Linux the
 * default ({@code NativePRNG}) reads {@code /dev/urandom} through a file stream for every token,
 * which is blocking I/O on whatever reactive thread subscribes. DRBG reads the OS entropy source
 * once, to seed itself, which {@link #seed()} makes happen at start-up. Tokens' bytes are drawn
 * 32 tokens at a time, and each token's bytes are wiped once it is made: a DRBG call has a fixed
 * cost of several hashes, which one per token made it a twentieth of an uncontended pair's CPU.
 * Threads claim tokens of the current batch by an atomic counter; whoever finds it used up draws
 * the next one, and a batch drawn by a thread that lost that race is dropped.
 */
public final class Tokens {

    /** The number of random hex digits a token starts with. */
    public static final int LENGTH = 32;

    private static final SecureRandom RANDOM = drbg();
    private static final char[] HEX = "0123456789abcdef".toCharArray();
    private static final int BYTES = 16;
    private static final int BATCH = 32;
    private static final AtomicReference<Batch> CURRENT = new AtomicReference<>(new Batch());

    private Tokens() {}

    /** Seeds the generator now; call where blocking is allowed (creating a lock instance). */
    public static void seed() {
        RANDOM.nextBytes(new byte[16]);
    }

    /** A new token; each acquisition draws its own. */
    public static String next() {
        return next("");
    }

    /** A new token followed by {@code address}, in one string. */
    public static String next(String address) {
        while (true) {
            Batch batch = CURRENT.get();
            int index = batch.taken.getAndIncrement();
            if (index < BATCH) {
                return batch.token(index, address);
            }
            CURRENT.compareAndSet(batch, new Batch());
        }
    }

    /** {@value #BATCH} tokens' bytes drawn at once; each index is claimed by one thread. */
    private static final class Batch {
        final byte[] bytes = new byte[BYTES * BATCH];
        final AtomicInteger taken = new AtomicInteger();

        Batch() {
            RANDOM.nextBytes(bytes);
        }

        String token(int index, String address) {
            int from = BYTES * index;
            char[] out = new char[LENGTH + address.length()];
            address.getChars(0, address.length(), out, LENGTH);
            for (int i = 0; i < BYTES; i++) {
                byte b = bytes[from + i];
                out[2 * i] = HEX[(b >> 4) & 0xF];
                out[2 * i + 1] = HEX[b & 0xF];
                bytes[from + i] = 0;
            }
            return new String(out);
        }
    }

    private static SecureRandom drbg() {
        try {
            return SecureRandom.getInstance("DRBG");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("The DRBG SecureRandom is part of every JDK since 9", e);
        }
    }
}
