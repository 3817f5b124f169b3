package io.reactivelock.redis;

import io.reactivelock.LockAcquisitionException.Reason;
import io.reactivelock.spi.Lease;
import io.reactivelock.spi.LockStore;
import io.reactivelock.spi.Request;
import io.reactivelock.spi.Tokens;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.ToIntFunction;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;
import io.reactivelock.LockLostException;

/**
 * The multi-lock on one Redis deployment, with the single lock's keys ({@link MultiLockScripts}).
 * The names of an acquisition are split into <em>groups</em>, one per hash slot, in slot order
 * and by name within a slot; without a Cluster every name is in one group. Each group is taken,
 * renewed and released by one script.
 *
 * <p>An attempt takes the groups one after another, each all or none. When a group is refused
 * (or fails), the groups taken before it are released before the attempt ends, so an attempt
 * that does not get every name ends holding none of them; since every caller takes the groups in
 * the same order, no two callers wait on each other's groups. The reply of an attempt comes only
 * after all of that ({@link #replyTimeout} is null: each command has its own timeout), so the
 * core never starts the next attempt while this one may still release what that one takes.
 *
 * <p>A refused attempt sleeps on the busy name as the single lock's waiters do (its token in the
 * name's sleepers, its channel subscribed here), so the release of that name by either lock
 * wakes it.
 */
final class MultiLockStore implements LockStore<MultiLockStore.Call> {

    private final StoreContext redis;
    private final ToIntFunction<String> slot;

    /** {@code slot} gives the hash slot of a key: the same for every key off a Cluster. */
    MultiLockStore(StoreContext redis, ToIntFunction<String> slot) {
        this.redis = redis;
        this.slot = slot;
    }

    /** The names of one hash slot, and the keys and channels of their scripts. */
    private record Group(List<String> names, String[] acquireKeys, String[] renewKeys, String[] releaseKeys,
            String[] channels) {

        static Group of(List<String> names, LockKeys keys) {
            int n = names.size();
            String[] acquire = new String[3 * n];
            String[] renew = new String[n];
            String[] release = new String[2 * n];
            String[] channels = new String[n];
            for (int i = 0; i < n; i++) {
                String lock = keys.lockKey(names.get(i));
                acquire[3 * i] = lock;
                acquire[3 * i + 1] = LockKeys.fenceKey(lock);
                acquire[3 * i + 2] = LockKeys.sleepersKey(lock);
                renew[i] = lock;
                release[2 * i] = lock;
                release[2 * i + 1] = LockKeys.sleepersKey(lock);
                channels[i] = LockKeys.releaseChannel(lock);
            }
            return new Group(List.copyOf(names), acquire, renew, release, channels);
        }
    }

    /** One acquisition: its groups in the order they are taken, and what the last attempt found. */
    static final class Call {
        final Request request;
        final List<Group> groups;
        final String ttlMillis;
        final String[] acquireArgs;
        final String[] releaseArgs;
        /** The fencing token of each name, set by the attempt that got them all. */
        volatile Map<String, Long> fencingTokens = Map.of();
        /** The release channel of the name that refused the last attempt. */
        volatile @Nullable String busyChannel;
        volatile @Nullable String waitingOn;
        volatile ReleaseNotices.@Nullable Member waiter;
        /**
         * The last attempt was sent while this acquisition listened on {@link #waitingOn} (Redis
         * confirmed the subscription): a notice for a registration on that name reaches it.
         */
        volatile boolean heard;

        Call(Request request, List<Group> groups, String waiterLease) {
            this.request = request;
            this.groups = groups;
            this.ttlMillis = Long.toString(request.ttl().toMillis());
            String fenceRetention = Long.toString(request.ttl().plus(RedisStore.FENCE_RETENTION).toMillis());
            this.acquireArgs = new String[] {request.token(), ttlMillis, fenceRetention, waiterLease,
                    Long.toString(System.currentTimeMillis())};
            this.releaseArgs = new String[] {request.token()};
        }

        String[] acquireArgs(Group group) {
            return concat(acquireArgs, group.channels);
        }

        String[] releaseArgs(Group group) {
            return concat(releaseArgs, group.channels);
        }

        private static String[] concat(String[] head, String[] tail) {
            String[] all = new String[head.length + tail.length];
            System.arraycopy(head, 0, all, 0, head.length);
            System.arraycopy(tail, 0, all, head.length, tail.length);
            return all;
        }
    }

    /** The state of an acquisition of {@code names} (sorted): grouped by hash slot, groups in slot order. */
    Call open(Request request, List<String> names) {
        Map<Integer, List<String>> bySlot = new TreeMap<>();
        for (String name : names) {
            bySlot.computeIfAbsent(slot.applyAsInt(redis.keys().lockKey(name)), s -> new ArrayList<>()).add(name);
        }
        List<Group> groups = bySlot.values().stream().map(group -> Group.of(group, redis.keys())).toList();
        return new Call(request, groups, redis.waiterLease());
    }

    /** A token addressed to this client's notices, as {@link RedisStore#newToken()}. */
    @Override
    public String newToken() {
        return Tokens.next(redis.notices().address());
    }

    /** Every call gives its names: {@link #open(Request, List)} is used instead. */
    @Override
    public Call open(Request request) {
        throw new UnsupportedOperationException("a multi-lock acquisition needs its names");
    }

    /**
     * The groups in slot order, each released again when a later one is busy. An attempt that fails
     * may leave groups taken (their release failed too); the core releases them after it, as after
     * any attempt that ends once the acquisition has.
     */
    @Override
    public CompletionStage<Reply> acquire(Call call, int attempt) {
        String on = call.waitingOn;
        call.heard = on != null && redis.notices().listening(on);
        return acquireFrom(call, 0, new HashMap<>()).toFuture();
    }

    /** Takes group {@code g} and the ones after it, given the fencing tokens of the groups before. */
    private Mono<Reply> acquireFrom(Call call, int g, Map<String, Long> fencingTokens) {
        Group group = call.groups.get(g);
        return redis.grantCommand(call.request.timers(), MultiLockScripts.ACQUIRE, fence -> fence > 0, group.acquireKeys,
                        call.acquireArgs(group))
                // Outcome unknown: this group is released with those before it.
                .onErrorResume(e -> releaseGroups(call, g + 1).then(Mono.error(e)))
                .flatMap(result -> {
                    if (result < 0) {
                        int busy = (int) -result - 1;
                        call.busyChannel = group.channels[busy];
                        return releaseAllBut(call, g).thenReturn(Reply.refused(Reason.BUSY,
                                "'" + group.names.get(busy) + "' stayed busy", null));
                    }
                    group.names.forEach(name -> fencingTokens.put(name, result));
                    if (g + 1 < call.groups.size()) {
                        return acquireFrom(call, g + 1, fencingTokens);
                    }
                    call.fencingTokens = Map.copyOf(fencingTokens);
                    return Mono.just(Reply.granted(result, call.request.ttl().toNanos()));
                });
    }

    /**
     * Releases every group but {@code g}, which refused this attempt: those before it were taken,
     * and those after it may hold this caller's registration from an earlier attempt, which a
     * single lock's release would otherwise keep the name for, for nobody to claim.
     */
    private Mono<Void> releaseAllBut(Call call, int g) {
        return Flux.range(0, call.groups.size()).filter(i -> i != g)
                .flatMap(i -> releaseGroup(call, call.groups.get(i)))
                .then();
    }

    /** Releases one group; a failure is left to the next attempt or to the core. */
    private Mono<Long> releaseGroup(Call call, Group group) {
        return command(call, MultiLockScripts.RELEASE, group.releaseKeys, call.releaseArgs(group))
                .onErrorResume(e -> Mono.empty());
    }

    /** Releases the first {@code count} groups, each once; a failure is left to the next attempt or to the core. */
    private Mono<Void> releaseGroups(Call call, int count) {
        return Flux.fromIterable(call.groups.subList(0, count))
                .flatMap(group -> releaseGroup(call, group))
                .then();
    }

    /** The fencing token of each name, once {@link #acquire} got them all. */
    Map<String, Long> fencingTokens(Call call) {
        return call.fencingTokens;
    }

    @Override
    public Mono<Void> renew(Call call, Lease lease) {
        long sentAt = System.nanoTime();
        return Flux.fromIterable(call.groups)
                .flatMap(group -> redis.grantCommand(call.request.timers(), MultiLockScripts.RENEW, lost -> lost == 0,
                                group.renewKeys, call.request.token(), call.ttlMillis)
                        .flatMap(lost -> lost == 0 ? Mono.<Void>empty() : Mono.error(new LockLostException(
                                group.names.get((int) (lost - 1)), "it expired or another holder took it, so the locks "
                                + call.request.name() + " are lost", null))))
                .then(Mono.fromRunnable(() -> lease.extendTo(sentAt + call.request.ttl().toNanos())));
    }

    @Override
    public Mono<Boolean> release(Call call) {
        return Flux.fromIterable(call.groups)
                .flatMap(group -> Mono.defer(() -> command(call, MultiLockScripts.RELEASE, group.releaseKeys, call.releaseArgs(group)))
                        .retryWhen(Retry.backoff(3, redis.options().minBackoff()).scheduler(call.request.timers())
                                .filter(RedisErrors::isTransient)))
                .then(Mono.just(false));
    }

    @Override
    public CompletionStage<?> releaseAbandoned(Call call) {
        return CompletableFuture.allOf(call.groups.stream()
                .map(group -> redis.commands().run(MultiLockScripts.RELEASE, group.releaseKeys, call.releaseArgs(group)).toCompletableFuture())
                .toArray(CompletableFuture[]::new));
    }

    @Override
    public boolean isTransient(Throwable error) {
        return RedisErrors.isTransient(error);
    }

    /** None: each command of an attempt has its own timeout, and the attempt ends after its releases. */
    @Override
    public @Nullable Duration replyTimeout(Duration commandTimeout) {
        return null;
    }

    /**
     * Sleeps on the name that refused the last attempt (after an error alone: backoff). If the
     * attempt was sent while the caller listened on that name, a release of it wakes the caller,
     * so polling only covers lost notices and expiries: the longest step does, as for the single
     * lock. Otherwise the notice for the registration that attempt made may have come before the
     * caller listened, and the release that sent it keeps the name for the caller: a short step.
     */
    @Override
    public Duration pause(Call call, int attempts) {
        if (attempts == 0) {
            return Duration.ZERO;
        }
        long retry = attempts - 1L;
        String channel = call.busyChannel;
        if (channel == null) {
            return redis.backoff().step(retry);
        }
        boolean heard = call.heard && channel.equals(call.waitingOn);
        if (!channel.equals(call.waitingOn)) {
            ReleaseNotices.Member previous = call.waiter;
            if (previous != null) {
                previous.leave();
            }
            call.waitingOn = channel;
            call.waiter = redis.notices().join(channel, true, call.request, call, this);
            if (call.request.waiter().hasEnded()) {
                stopWaiting(call); // the acquisition ended while it was joining
            }
        }
        return redis.backoff().step(heard ? Long.MAX_VALUE : retry);
    }

    @Override
    public void stopWaiting(Call call) {
        ReleaseNotices.Member w = call.waiter;
        if (w != null) {
            w.leave();
        }
    }

    private Mono<Long> command(Call call, LuaScript script, String[] keys, String... args) {
        return redis.command(call.request.timers(), script, keys, args);
    }

    @Override
    public String toString() {
        return "MultiLockStore{" + redis.options() + "}";
    }
}
