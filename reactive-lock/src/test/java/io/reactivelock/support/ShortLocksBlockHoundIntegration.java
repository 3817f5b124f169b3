package io.reactivelock.support;

import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Lets BlockHound accept two short in-memory locks of Lettuce and the JDK that reactive code
 * cannot avoid, so that BlockHound's own error cannot corrupt them.
 *
 * <p>{@code io.lettuce.core.protocol.SharedLock} guards the writer count of a connection with a
 * {@code ReentrantLock} held for a few instructions, not for I/O; when two threads write at once
 * one of them parks briefly, which BlockHound reports. Worse, the error escapes from inside the
 * lock and leaves Lettuce's writer count negative, so every later write spins forever
 * (redis/lettuce#3804).
 *
 * <p>The JDK's {@code ScheduledThreadPoolExecutor} queue behind Reactor's parallel scheduler is
 * guarded the same way. Reactor allows its {@code offer} and {@code take}, but cancelling a
 * periodic timer (a disposed {@code Flux.interval}) reaches its {@code remove}, and an error thrown
 * from inside that lock's acquisition left the lock unusable: every later timer parked forever.
 *
 * <p>The JDK's logging creates its global handlers on the first record logged, under its
 * configuration lock. Lettuce's first "Reconnecting" records (through the JDK logging, as no SLF4J
 * binding is present) come from two reconnect threads at once when both connections of a lock drop
 * together; the error thrown at the one that waited escaped Lettuce's reconnect task, which catches
 * exceptions only, and that connection was never reconnected.
 *
 * <p>Nothing of this library is allowed here: its own code stays policed. The example app's tests
 * use this same class through the library's test jar.
 */
public final class ShortLocksBlockHoundIntegration implements BlockHoundIntegration {

    @Override
    public void applyTo(BlockHound.Builder builder) {
        builder.allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "incrementWriters");
        builder.allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "decrementWriters");
        builder.allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "doExclusive");
        // Reactor allows disposing SchedulerTask and WorkerTask but not PeriodicWorkerTask, which a
        // Flux.interval on a worker uses: cancelling a renewal ticker takes the queue's lock too.
        builder.allowBlockingCallsInside("reactor.core.scheduler.PeriodicWorkerTask", "dispose");
        builder.allowBlockingCallsInside("java.util.logging.LogManager", "initializeGlobalHandlers");
        for (String method : new String[] {"offer", "take", "poll", "remove"}) {
            builder.allowBlockingCallsInside("java.util.concurrent.ScheduledThreadPoolExecutor$DelayedWorkQueue", method);
        }
    }
}
