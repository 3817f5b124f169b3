package io.reactivelock.internal;

import io.reactivelock.LockLease;
import org.jspecify.annotations.Nullable;

/**
 * Creates and renews {@link LockLease}s for lock implementations outside {@code io.reactivelock},
 * so that the lease keeps no public constructor or mutator.
 */
public final class Leases {

    /** What {@link LockLease} hands over when it is initialised. */
    public interface Access {
        /** A new lease; see {@link LockLease} for the meaning of each value. */
        LockLease create(String name, String token, long fencingToken, long validUntilNanos);

        /** Records a renewal: the lease is now valid until {@code validUntilNanos}. */
        void extendTo(LockLease lease, long validUntilNanos);
    }

    private static volatile @Nullable Access access;

    private Leases() {}

    /** Called once, by {@link LockLease}'s static initialiser. */
    public static void install(Access lockLeaseAccess) {
        if (access != null) {
            throw new IllegalStateException("already installed");
        }
        access = lockLeaseAccess;
    }

    /** A new lease, valid until the {@link System#nanoTime()} instant {@code validUntilNanos}. */
    public static LockLease create(String name, String token, long fencingToken, long validUntilNanos) {
        return access().create(name, token, fencingToken, validUntilNanos);
    }

    /** Extends {@code lease} to the {@link System#nanoTime()} instant {@code validUntilNanos}. */
    public static void extendTo(LockLease lease, long validUntilNanos) {
        access().extendTo(lease, validUntilNanos);
    }

    private static Access access() {
        Access a = access;
        if (a == null) {
            try {
                Class.forName(LockLease.class.getName(), true, LockLease.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException(e);
            }
            a = access;
        }
        if (a == null) {
            throw new IllegalStateException("LockLease did not install its access");
        }
        return a;
    }
}
