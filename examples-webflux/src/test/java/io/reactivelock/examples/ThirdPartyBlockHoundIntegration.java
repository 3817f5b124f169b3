package io.reactivelock.examples;

import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Lets BlockHound accept two short, in-memory locks of third-party code: the one Lettuce takes on
 * its write path, and the one Reactor takes to cancel a periodic timer.
 *
 * <p>Lettuce 7's {@code io.lettuce.core.protocol.SharedLock} guards a connection's writer count
 * with a {@code ReentrantLock} held for a few instructions, not for I/O; when two threads write
 * at once one parks briefly, which BlockHound reports. The error then escapes from inside the
 * lock and leaves the writer count wrong, so later writes on that connection hang
 * (redis/lettuce#3804): the tests would fail for a reason that is not in this app. The same
 * allowance as reactive-lock's own tests. Neither reactive-lock's code nor this app's is allowed.
 */
public final class ThirdPartyBlockHoundIntegration implements BlockHoundIntegration {

    @Override
    public void applyTo(BlockHound.Builder builder) {
        builder.allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "incrementWriters");
        builder.allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "decrementWriters");
        builder.allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "doExclusive");
        // Reactor's own integration allows disposing SchedulerTask and WorkerTask (removing them
        // from a ScheduledThreadPoolExecutor's queue takes that queue's lock) but not
        // PeriodicWorkerTask, which a Flux.interval on a worker uses: cancelling the lease's
        // renewal ticker when a body completes on an event loop can park there for an instant.
        builder.allowBlockingCallsInside("reactor.core.scheduler.PeriodicWorkerTask", "dispose");
    }
}
