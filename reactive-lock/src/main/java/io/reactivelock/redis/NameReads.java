package io.reactivelock.redis;

import io.reactivelock.inspect.LockInspector;
import io.lettuce.core.KeyValue;
import io.lettuce.core.Range;
import io.lettuce.core.ScoredValue;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;
import io.reactivelock.inspect.LockState;

/**
 * The reads of one {@link LockInspector#inspect}, in at most two round trips. {@link #first()}
 * sends, together, every read that needs nothing else: the lock's keys, the read-write lock's
 * writer, how many members each lease set has, and the server's {@code TIME}. {@link #second()}
 * sends what the first found to read: the fair line's deadlines, and the members of the lease sets
 * whose lease ends after that time (a lease set keeps ended members until a script drops them).
 * {@link #state()} decodes the replies. All the keys of a name share its hash slot, so on a
 * Cluster one master answers them all (and its clock scored the lease sets).
 */
final class NameReads {

    private static final int SHOWN_TOKEN_LENGTH = 8;

    private final RedisClusterAsyncCommands<String, String> commands;
    private final String name;
    private final String permitsKey;
    private final String readersKey;
    private final String waitingWritersKey;
    private final String waitersKey;

    private final CompletableFuture<List<String>> time;
    private final CompletableFuture<String> holder;
    private final CompletableFuture<Long> ttl;
    private final CompletableFuture<String> fence;
    private final CompletableFuture<List<String>> line;
    private final CompletableFuture<Long> inLine;
    private final CompletableFuture<Long> sleeping;
    private final CompletableFuture<String> writer;
    private final CompletableFuture<Long> writerTtl;
    private final CompletableFuture<String> writerFence;
    private final CompletableFuture<Long> permitMembers;
    private final CompletableFuture<Long> readerMembers;
    private final CompletableFuture<Long> waitingWriterMembers;

    private long nowMillis;
    private CompletableFuture<List<KeyValue<String, String>>> deadlines = CompletableFuture.completedFuture(List.of());
    private CompletableFuture<List<ScoredValue<String>>> permitHolders = CompletableFuture.completedFuture(List.of());
    private CompletableFuture<Long> readers = CompletableFuture.completedFuture(0L);
    private CompletableFuture<Long> writersWaiting = CompletableFuture.completedFuture(0L);

    /** Sends the first round trip's commands for {@code name}, whose lock key is {@code key}. */
    NameReads(Deployment redis, String name, String key) {
        this.commands = redis.commands();
        this.name = name;
        String queueKey = LockKeys.queueKey(key);
        String writerKey = LockKeys.writerKey(key);
        this.permitsKey = LockKeys.permitsKey(key);
        this.readersKey = LockKeys.readersKey(key);
        this.waitingWritersKey = LockKeys.writersWaitingKey(key);
        this.waitersKey = LockKeys.waitersKey(key);
        time = redis.time(key).toCompletableFuture();
        holder = commands.get(key).toCompletableFuture();
        ttl = commands.pttl(key).toCompletableFuture();
        fence = commands.get(LockKeys.fenceKey(key)).toCompletableFuture();
        line = commands.lrange(queueKey, 0, LockInspector.MAX_WAITERS_LISTED - 1).toCompletableFuture();
        inLine = commands.llen(queueKey).toCompletableFuture();
        sleeping = commands.zcard(LockKeys.sleepersKey(key)).toCompletableFuture();
        writer = commands.get(writerKey).toCompletableFuture();
        writerTtl = commands.pttl(writerKey).toCompletableFuture();
        writerFence = commands.get(LockKeys.fenceKey(writerKey)).toCompletableFuture();
        permitMembers = commands.zcard(permitsKey).toCompletableFuture();
        readerMembers = commands.zcard(readersKey).toCompletableFuture();
        waitingWriterMembers = commands.zcard(waitingWritersKey).toCompletableFuture();
    }

    /** Completes with the first round trip. */
    CompletableFuture<Void> first() {
        return CompletableFuture.allOf(time, holder, ttl, fence, line, inLine, sleeping, writer, writerTtl, writerFence,
                permitMembers, readerMembers, waitingWriterMembers);
    }

    /** Once {@link #first()} completed: sends the second round trip, or returns {@code null} when it found nothing to read. */
    @Nullable CompletableFuture<Void> second() {
        List<String> now = time.getNow(null);
        nowMillis = Long.parseLong(now.get(0)) * 1000 + Long.parseLong(now.get(1)) / 1000;
        Range<Long> live = Range.from(Range.Boundary.excluding(nowMillis), Range.Boundary.unbounded());
        boolean any = false;
        List<String> tokens = line.getNow(null);
        if (!tokens.isEmpty()) {
            deadlines = commands.hmget(waitersKey, tokens.toArray(String[]::new)).toCompletableFuture();
            any = true;
        }
        if (permitMembers.getNow(null) > 0) {
            permitHolders = commands.zrangebyscoreWithScores(permitsKey, live).toCompletableFuture();
            any = true;
        }
        if (readerMembers.getNow(null) > 0) {
            readers = commands.zcount(readersKey, live).toCompletableFuture();
            any = true;
        }
        if (waitingWriterMembers.getNow(null) > 0) {
            writersWaiting = commands.zcount(waitingWritersKey, live).toCompletableFuture();
            any = true;
        }
        return any ? CompletableFuture.allOf(deadlines, permitHolders, readers, writersWaiting) : null;
    }

    /** Once both round trips completed: what they read. */
    LockState state() {
        return new LockState(name, shownHolder(holder.getNow(null), ttl.getNow(null)), ttlOf(holder.getNow(null), ttl.getNow(null)),
                fenceOrNull(fence.getNow(null)), inLine.getNow(null) + sleeping.getNow(null), waiters(), semaphore(), readWrite());
    }

    /** The fair line's waiters, with what is left of their leases. */
    private List<LockState.Waiter> waiters() {
        List<LockState.Waiter> waiters = new ArrayList<>();
        for (KeyValue<String, String> deadline : deadlines.getNow(null)) {
            long left = deadline.hasValue() ? Long.parseLong(deadline.getValue()) - nowMillis : 0;
            waiters.add(new LockState.Waiter(shown(deadline.getKey()), Duration.ofMillis(Math.max(0, left))));
        }
        return waiters;
    }

    /** The semaphore of the live members {@code "<n>:<token>"} of its permits; {@code null} when there are none. */
    private LockState.@Nullable Semaphore semaphore() {
        List<ScoredValue<String>> members = permitHolders.getNow(null);
        if (members.isEmpty()) {
            return null;
        }
        long permits = 0;
        List<LockState.PermitHolder> holders = new ArrayList<>(members.size());
        for (ScoredValue<String> member : members) {
            String value = member.getValue();
            int colon = value.indexOf(':');
            int n = Integer.parseInt(value.substring(0, colon));
            permits += n;
            holders.add(new LockState.PermitHolder(shown(value.substring(colon + 1)), n,
                    Duration.ofMillis((long) member.getScore() - nowMillis)));
        }
        return new LockState.Semaphore(permits, holders);
    }

    /** The read-write lock; {@code null} when no writer or reader holds it and no writer waits. */
    private LockState.@Nullable ReadWrite readWrite() {
        String shownWriter = shownHolder(writer.getNow(null), writerTtl.getNow(null));
        if (shownWriter == null && readers.getNow(null) == 0 && writersWaiting.getNow(null) == 0) {
            return null;
        }
        return new LockState.ReadWrite(shownWriter, ttlOf(writer.getNow(null), writerTtl.getNow(null)), fenceOrNull(writerFence.getNow(null)),
                readers.getNow(null), writersWaiting.getNow(null));
    }

    // A key's GET and PTTL are two replies, not one atomic read: a key that expired between them is free.

    /** The holder that a key's {@code GET} gave, abbreviated, if its {@code PTTL} says the key still existed. */
    private static @Nullable String shownHolder(@Nullable String token, long ttlMillis) {
        return token != null && ttlMillis != -2 ? shown(token) : null;
    }

    /** What is left of the lease of a key's holder, if held and the key has an expiry. */
    private static @Nullable Duration ttlOf(@Nullable String token, long ttlMillis) {
        return token != null && ttlMillis >= 0 ? Duration.ofMillis(ttlMillis) : null;
    }

    /** The last fencing token in a fencing record; null for none. */
    private static @Nullable Long fenceOrNull(@Nullable String record) {
        return record == null ? null : Long.valueOf(record);
    }

    /** The first 8 characters of a token: the whole token is its holder's secret. */
    private static String shown(String token) {
        return token.length() <= SHOWN_TOKEN_LENGTH ? token : token.substring(0, SHOWN_TOKEN_LENGTH);
    }
}
