package io.reactivelock.nemesis;

import java.util.List;

/**
 * Everything a nemesis run recorded. Times are nanoseconds since the run's origin (the parent's
 * {@link System#nanoTime()} when it started): the clients stamp their events with their own
 * {@code System.nanoTime()}, which on Linux reads the machine-wide {@code CLOCK_MONOTONIC}, and the
 * parent subtracts its origin (see {@link NemesisRun}). {@code -1} means "did not happen".
 *
 * @param redisVersion the lock Redis' version
 * @param nemesisStart when the clients were all ready and the first fault could come
 * @param nemesisEnd when the last fault ended and everything was healed
 * @param quiescent when every client had finished its operations
 * @param keysGone when no lock key was left after quiescence (-1: some were left behind)
 * @param ops every operation the clients started, in the order they ended
 * @param accesses every access the resource saw (both twins), in its order
 * @param faults every fault, in the order they started
 * @param renewals every lease renewal the clients' listeners heard
 * @param losses every lost lease the clients' listeners heard
 * @param blocking blocking calls BlockHound caught on the clients' reactive threads
 * @param quiescence each client's report once its operations were done
 * @param leftAtQuiescence lock keys (not fencing records) present at quiescence
 * @param leftBehind lock keys still present one longest TTL plus the slack after quiescence
 * @param clockChecks for each client, the parent's stamps around its first event and the event's own
 * @param stalls every stall of a client JVM or of the parent (see {@link StallWatch})
 */
record History(Settings settings, String redisVersion, long nemesisStart, long nemesisEnd, long quiescent, long keysGone,
        long end,
        List<Op> ops, List<Access> accesses, List<Fault> faults, List<Renewal> renewals, List<Loss> losses,
        List<Blocking> blocking, List<Quiescence> quiescence, List<String> leftAtQuiescence, List<String> leftBehind,
        List<ClockCheck> clockChecks, List<Stall> stalls) {

    /**
     * One operation: acquire (from {@code start}), body from {@code enter} to {@code exit} under a lease
     * requested at {@code leaseStart} and last known valid until {@code validUntil}, with fencing token
     * {@code fence}; {@code readAt} when its read came back, {@code writeSent} when it sent its write;
     * {@code end} when {@code withLock} ended,
     * with {@code outcome}: {@code ok}, {@code lost}, {@code max-lease-time}, {@code acquire-<reason>},
     * {@code cancelled}, {@code hung} (not ended when the client drained) or {@code error-<class>}.
     */
    record Op(String id, String client, int instance, String name, boolean fair, long ttlNanos, long timeoutNanos,
            long bodyMillis, long cancelMillis, long start, long enter, long leaseStart, long fence, long readAt, long writeSent,
            long exit, long validUntil, long end, String outcome) {

        boolean entered() {
            return enter >= 0;
        }

        /** When the holder stopped believing it held a valid lease: the body's exit or the lease's end. */
        long validEnd() {
            long exited = exit < 0 ? Long.MAX_VALUE : exit;
            return validUntil < 0 ? exited : Math.min(exited, validUntil);
        }

        /** When the acquisition phase ended: the body entered, or {@code withLock} ended without it. */
        long acquiredOrGaveUp() {
            return entered() ? enter : end;
        }
    }

    /**
     * One access the resource saw, at the {@code fenced} twin or the unfenced one: {@code seenBefore} is
     * the highest token that twin had seen for the name.
     */
    record Access(long seq, String op, String name, boolean fenced, boolean write, long fence, long seenBefore,
            long valueBefore, boolean accepted, long valueRead) {

        /** An access whose token is below one the resource had already seen for the name. */
        boolean stale() {
            return fence < seenBefore;
        }
    }

    /** One fault: {@code target} is {@code lock-redis}, {@code proxy}, {@code sentinel} or a client's name. */
    record Fault(FaultKind kind, String target, long start, long end, String detail) {

        /** Whether it reached {@code op}: acted on the lock server of its name, or froze its JVM. */
        boolean reaches(Op op) {
            return kind.reaches(target, op.name(), op.client());
        }
    }

    record Renewal(String client, int instance, String name, long at) {}

    record Loss(String client, int instance, String name, long at, String cause) {}

    record Blocking(String client, long at, String method) {}

    /** A stall of {@code process} (a client's name, or {@code parent}): {@code process} or {@code timers}, see {@link StallWatch}. */
    record Stall(String process, String kind, long from, long to, long gcMillis) {}

    /** A client's state once drained: its locks' {@code activeLeases()} and operations still under way. */
    record Quiescence(String client, long at, String activeLeases, int hung) {}

    /** The parent's stamps just before the client was started and when its first event arrived, and the event's. */
    record ClockCheck(String client, long parentBefore, long clientStamp, long parentAfter) {

        boolean consistent() {
            return parentBefore <= clientStamp && clientStamp <= parentAfter;
        }
    }

    /** The longest TTL any operation may use, in nanoseconds. */
    static long longestTtlNanos() {
        return NemesisClient.TTLS.stream().mapToLong(java.time.Duration::toNanos).max().orElseThrow();
    }
}
