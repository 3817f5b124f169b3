package io.reactivelock.inspect;

import io.reactivelock.LockOptions;
import java.util.Objects;

/**
 * Settings of a {@link LockInspector}: the {@link LockOptions} of the locks it looks at (their key
 * prefix, the command timeout, and the listener told about forced releases), and whether
 * {@link LockInspector#forceRelease} may run at all. Force-release is off unless enabled here.
 *
 * @param lockOptions the options the inspected locks were created with
 * @param forceReleaseEnabled whether {@link LockInspector#forceRelease} may delete a lock
 */
public record InspectorOptions(LockOptions lockOptions, boolean forceReleaseEnabled) {

    public InspectorOptions {
        Objects.requireNonNull(lockOptions, "lockOptions");
    }

    /** Read-only inspection of the locks created with {@code lockOptions}. */
    public static InspectorOptions of(LockOptions lockOptions) {
        return new InspectorOptions(lockOptions, false);
    }

    /** Read-only inspection of locks with the default options (key prefix {@code lock}). */
    public static InspectorOptions defaults() {
        return of(LockOptions.defaults());
    }

    /** The same options with {@link LockInspector#forceRelease} allowed. */
    public InspectorOptions withForceReleaseEnabled() {
        return new InspectorOptions(lockOptions, true);
    }
}
