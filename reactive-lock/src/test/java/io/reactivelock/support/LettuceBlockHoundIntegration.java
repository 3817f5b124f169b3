package io.reactivelock.support;

import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Lets BlockHound accept the one lock Lettuce takes on its write path.
 *
 * <p>{@code io.lettuce.core.protocol.SharedLock} guards the writer count of a connection with a
 * {@code ReentrantLock} held for a few instructions, not for I/O; when two threads write at once
 * one of them parks briefly, which BlockHound reports. Worse, the error escapes from inside the
 * lock and leaves Lettuce's writer count negative, so every later write spins forever
 * (redis/lettuce#3804). Nothing of this library is allowed here: its own code stays policed.
 */
public final class LettuceBlockHoundIntegration implements BlockHoundIntegration {

    @Override
    public void applyTo(BlockHound.Builder builder) {
        builder.allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "incrementWriters");
        builder.allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "decrementWriters");
        builder.allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "doExclusive");
    }
}
