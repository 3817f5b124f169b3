package io.reactivelock.redis;

import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.spi.Lease;
import io.reactivelock.spi.LockStore;
import io.reactivelock.spi.Request;
import io.reactivelock.spi.Tokens;
import io.reactivelock.spi.Waiter;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * The non-fair lock on one Redis deployment: acquire is {@code SET NX PX} plus a fencing token in
 * one script, release a compare-and-delete that hands the lock to the oldest sleeper when there
 * is one, renewal a compare-and-expire. A holder with waiters in this process hands the lock
 * straight to the one that has waited longest ({@code HAND_OVER}), for runs of at most an eighth
 * of the longest backoff step.
 *
 * <p>A body that does not see the lease needs no fencing token: the first attempt of such an
 * acquisition, unless it queued behind this process's waiters or another acquisition's {@code SET}
 * on the lock ({@link #beforeFirstAttempt}), is the plain {@code SET NX PX},
 * which costs Redis a fraction of any script; only if it finds the lock busy does the script
 * follow, in the same attempt, to register the waiter for a wake-up.
 *
 * <p>With release notices, a waiter that finds the lock busy registers its token in the lock's
 * sleepers (scored by when it started) and sleeps until woken or its backoff step (the first
 * local waiter on the lock) or the longer {@linkplain #followerStep() follower step} (the
 * others). A release that finds sleepers keeps the lock for the one that started first, in
 * whichever process, for a {@linkplain #grace grace period}, and wakes it by name: its next
 * attempt claims the lock, so one release leads to one attempt in the whole fleet, and waiters of
 * other processes are served oldest first. Newcomers find the lock busy meanwhile: a woken waiter
 * that had to race them for a freed lock could lose, and each loss cost it another round of runs
 * of hand-offs.
 */
class RedisStore implements LockStore<RedisStore.Call> {

    /** How long the fencing record outlives the lease it was issued with. */
    static final Duration FENCE_RETENTION = Duration.ofSeconds(60);

    /** How many times the holder's own release is sent before it is left to the background. */
    static final int RELEASE_TRIES = 4;

    final StoreContext redis;
    /** Locks with a plain {@code SET NX PX} of this process on its way, to the acquisition that sent it. */
    private final ConcurrentHashMap<String, Call> settingNow = new ConcurrentHashMap<>();

    /** The grace period in ms, as the release script takes it. */
    private final String grace;

    RedisStore(StoreContext redis) {
        this.redis = redis;
        this.grace = Long.toString(grace(redis.options().maxBackoff(), redis.options().commandTimeout()).toMillis());
    }

    /**
     * How long a release keeps the lock for the sleeper it wakes: one longest backoff step, the
     * longest the other waiters sleep anyway, but no longer than one command may take (a live
     * sleeper claims it with one command once the notice is in), and at least a millisecond.
     */
    static Duration grace(Duration maxBackoff, Duration commandTimeout) {
        Duration step = maxBackoff.compareTo(commandTimeout) < 0 ? maxBackoff : commandTimeout;
        return step.toMillis() < 1 ? Duration.ofMillis(1) : step;
    }

    /**
     * One acquisition's lock key and its place among the local waiters. Script keys and arguments
     * are made per command rather than kept: a waiter holds as little as it can.
     */
    static final class Call {
        final Request request;
        final String lockKey;
        final String channel;
        /** When the acquisition started (epoch ms): its place among the sleepers of every process. */
        final String startedAt = Long.toString(System.currentTimeMillis());
        volatile ReleaseNotices.@Nullable Member waiter;
        /**
         * The last script attempt was sent while this waiter listened on a confirmed subscription,
         * so the notice of a release that woke it by name reaches it: it may sleep a long step.
         */
        volatile boolean heard;

        Call(Request request, String lockKey) {
            this.request = request;
            this.lockKey = lockKey;
            this.channel = LockKeys.releaseChannel(lockKey);
        }

        String token() {
            return request.token();
        }

        String ttlMillis() {
            return Long.toString(request.ttl().toMillis());
        }

        /** How long the fencing record outlives this acquisition's lease, in ms. */
        String fenceRetention() {
            return Long.toString(request.ttl().plus(FENCE_RETENTION).toMillis());
        }
    }

    /** A token addressed to this client's notices, where a release that keeps the lock for it publishes it. */
    @Override
    public String newToken() {
        return Tokens.next(redis.notices().address());
    }

    @Override
    public Call open(Request request) {
        return new Call(request, redis.keys().lockKey(request.name()));
    }

    String[] acquireKeys(Call call) {
        return new String[] {call.lockKey, LockKeys.fenceKey(call.lockKey), LockKeys.sleepersKey(call.lockKey)};
    }

    /** The arguments of attempt number {@code attempt} (1 for the first). */
    String[] acquireArgs(Call call, int attempt) {
        return new String[] {call.token(), call.ttlMillis(), call.fenceRetention(), redis.waiterLease(), call.startedAt,
                attempt > 1 ? "1" : "0"}; // an earlier attempt may have registered
    }

    String[] releaseKeys(Call call) {
        return new String[] {call.lockKey, LockKeys.sleepersKey(call.lockKey)};
    }

    /** With the grace period a woken sleeper has to claim the lock kept for it ({@link #grace(Duration, Duration)}). */
    String[] releaseArgs(Call call) {
        return new String[] {call.token(), call.channel, grace};
    }

    /**
     * The plain {@code SET NX PX} for the first attempt of an acquisition that needs no fencing
     * token and found no waiter of this process ahead of it, one per lock at a time: in a burst of
     * newcomers on one name, the others go straight to the script, which registers them, instead
     * of each sending a {@code SET} that will find the lock busy. So does the first attempt after
     * this process's release kept the lock for a sleeper (a worker that asks again at once, while
     * the sleeper claims it).
     */
    @Override
    public CompletionStage<Reply> acquire(Call call, int attempt) {
        if (attempt > 1 || call.request.fencing() || call.waiter != null
                || settingNow.putIfAbsent(call.lockKey, call) != null) {
            return acquireByScript(call, attempt, false);
        }
        if (redis.notices().takeKeptForSleeper(call.channel)) {
            settingNow.remove(call.lockKey, call);
            return acquireByScript(call, attempt, true);
        }
        Duration ttl = call.request.ttl();
        return redis.setIfAbsent(call.lockKey, call.token(), ttl.toMillis())
                .whenComplete((set, error) -> settingNow.remove(call.lockKey, call))
                .thenCompose(set -> {
                    if (set) {
                        return CompletableFuture.completedStage(Reply.granted(LockLease.NO_FENCING_TOKEN, ttl.toNanos()));
                    }
                    // Busy: the script registers the waiter, unless the acquisition ended meanwhile.
                    return call.request.waiter().hasEnded() ? CompletableFuture.completedStage(Reply.busy())
                            : acquireByScript(call, attempt, true);
                });
    }

    /**
     * Attempt number {@code attempt} by the acquire script: a fencing token if granted, else
     * registered to be woken; {@code busy} when a {@code SET} of this attempt just found the lock
     * busy.
     */
    CompletionStage<Reply> acquireByScript(Call call, int attempt, boolean busy) {
        listenBeforeRegistering(call, busy);
        long validFor = call.request.ttl().toNanos();
        return redis.grant(acquireScript(), fence -> fence > 0, acquireKeys(call), acquireArgs(call, attempt))
                .thenApply(fence -> fence > 0 ? Reply.granted(fence, validFor) : Reply.busy());
    }

    /**
     * The script registers a waiter that finds the lock busy, and the release right after may
     * publish its token at once: a waiter that joins the channel only when the reply is back would
     * miss that notice. So one that knows the lock is {@code busy} joins first if the channel is
     * listening (no subscription is sent for it then); each notes whether it
     * {@linkplain Call#heard heard}, and one that did not takes a short step, not a long one.
     */
    private void listenBeforeRegistering(Call call, boolean busy) {
        if (busy && call.waiter == null && redis.notices().listening(call.channel)) {
            join(call);
        }
        call.heard = call.waiter != null && redis.notices().listening(call.channel);
    }

    LuaScript acquireScript() {
        return LockScripts.ACQUIRE;
    }

    LuaScript releaseScript() {
        return LockScripts.RELEASE;
    }

    @Override
    public Mono<Void> renew(Call call, Lease lease) {
        long sentAt = System.nanoTime();
        return redis.grantCommand(call.request.timers(), LockScripts.RENEW, renewed -> renewed == 1, new String[] {call.lockKey},
                        call.token(), call.ttlMillis())
                .flatMap(renewed -> {
                    if (renewed == 1) {
                        lease.extendTo(sentAt + call.request.ttl().toNanos());
                        return Mono.empty();
                    }
                    return Mono.error(new LockLostException(call.request.name(), "it expired or another holder took it", null));
                });
    }

    @Override
    public Mono<Boolean> release(Call call) {
        ReleaseNotices.Member next = redis.notices().reserveLongestWaiting(call.channel, handOffRun(), this);
        if (next == null) {
            return releaseCommand(call);
        }
        Waiter recipient = next.waiter();
        return Mono.defer(() -> {
            long sentAt = System.nanoTime();
            recipient.expectHandOff(); // before sending: its end then releases, whatever happens
            // The grant is taken from the command itself, so that one answered after our timeout
            // still reaches the recipient (or is released if the recipient has ended).
            CompletableFuture<Long> handOff = handOffCommand(call, (Call) next.call()).toCompletableFuture()
                    .whenComplete((result, error) -> {
                        if (result != null && handedOver(result)) {
                            recipient.handOver(result, sentAt);
                        }
                    });
            return LockCommands.within(() -> handOff, redis.options().commandTimeout(), call.request.timers())
                    .map(result -> {
                        if (!handedOver(result)) {
                            next.unreserve();
                            notHandedOver(recipient);
                        }
                        return handedOver(result) || handedOnByRelease(result);
                    })
                    .onErrorResume(e -> {
                        // Outcome unknown: an ordinary release changes nothing if the hand-off happened.
                        next.unreserve();
                        recipient.handOffUnknown();
                        return releaseCommand(call);
                    });
        });
    }

    /**
     * The longest run of local hand-offs on one lock, an eighth of the longest backoff step: with
     * up to eight processes taking turns, a waiter elsewhere waits about one longest step for its
     * process's turn. Runs of a whole step made the longest wait between four processes about a
     * second (the bench's C16X cell), three times Redisson's.
     */
    @Nullable Duration handOffRun() {
        return redis.options().maxBackoff().dividedBy(8);
    }

    /** Hands the lock held by {@code call} to {@code next}; see {@link #handedOver}. */
    CompletionStage<Long> handOffCommand(Call call, Call next) {
        return redis.grant(LockScripts.HAND_OVER, this::handedOver, acquireKeys(call), call.token(), next.token(),
                next.fenceRetention(), next.ttlMillis());
    }

    /** Whether a hand-off script's result means the named waiter got the lock (then it is the fence). */
    boolean handedOver(long result) {
        return result > 0;
    }

    /** Whether a release script's result means Redis handed the lock to a waiter (of any process): 2 for both scripts. */
    boolean handedOnByRelease(long result) {
        return result == 2;
    }

    /** The lease was already gone: the reserved waiter tries on its own. */
    void notHandedOver(Waiter recipient) {
        recipient.wake();
    }

    /**
     * The release, tried up to {@value #RELEASE_TRIES} times while it fails with a transient error, a
     * backoff step apart; true when Redis handed the lock on.
     */
    private Mono<Boolean> releaseCommand(Call call) {
        return releaseCommand(call, 0);
    }

    private Mono<Boolean> releaseCommand(Call call, int tried) {
        return command(call, releaseScript(), releaseKeys(call), releaseArgs(call))
                .map(result -> {
                    boolean handedOn = handedOnByRelease(result);
                    if (handedOn) {
                        redis.notices().keptForSleeper(call.channel);
                    }
                    return handedOn;
                })
                .onErrorResume(e -> tried + 1 < RELEASE_TRIES && RedisErrors.isTransient(e),
                        e -> Mono.delay(redis.backoff().step(tried), call.request.timers()).then(releaseCommand(call, tried + 1)));
    }

    /** After it, the lock may be free (a lost lease, a late grant given back): the first local waiter tries at once. */
    @Override
    public CompletionStage<?> releaseAbandoned(Call call) {
        return redis.commands().run(releaseScript(), releaseKeys(call), releaseArgs(call))
                .whenComplete((result, error) -> redis.notices().wakeFirst(call.channel));
    }

    @Override
    public boolean isTransient(Throwable error) {
        return RedisErrors.isTransient(error);
    }

    @Override
    public @Nullable Duration pause(Call call, int attempts) {
        if (attempts == 0) {
            return beforeFirstAttempt(call);
        }
        long retry = attempts - 1L;
        join(call);
        if (!call.heard) {
            return redis.backoff().step(retry);
        }
        // The attempt was sent on a confirmed subscription: a release that keeps the lock for this
        // waiter reaches it. Polling only covers lost notices and holders that died, which the
        // first local waiter does at the longest step; the others wait to be woken.
        return redis.notices().isFirst(Objects.requireNonNull(call.waiter)) ? redis.backoff().step(Long.MAX_VALUE) : followerStep();
    }

    /**
     * How long a waiter that is not this process's first on the lock sleeps unless woken: a safety
     * net only, since the first keeps the sleepers' registration alive (five waiter leases).
     */
    Duration followerStep() {
        return redis.options().waiterLease().multipliedBy(5);
    }

    /**
     * A newcomer does not try ahead of this process's waiters on the lock, nor beside a plain
     * {@code SET} of this process on its way: it queues for a hand-off (or the first backoff step), which keeps
     * local hand-offs in arrival order and spares an attempt that would find the lock busy. A
     * burst of acquisitions of one name thus sends one command, not one script per acquisition
     * (the bench's scale cell: 100 per name, whose scripts made replies late enough to time out).
     */
    Duration beforeFirstAttempt(Call call) {
        if (redis.notices().waiters(call.channel) == 0 && !settingNow.containsKey(call.lockKey)) {
            return Duration.ZERO;
        }
        join(call);
        return redis.backoff().step(0);
    }

    private void join(Call call) {
        if (call.waiter == null) {
            call.waiter = redis.notices().join(call.channel, true, call.request, call, this);
            if (call.request.waiter().hasEnded()) {
                stopWaiting(call); // the acquisition ended while it was joining
            }
        }
    }

    @Override
    public void stopWaiting(Call call) {
        ReleaseNotices.Member w = call.waiter;
        if (w != null) {
            w.leave();
        }
    }

    /** How many locks have a plain {@code SET NX PX} of this process on its way now. */
    int settingNow() {
        return settingNow.size();
    }

    /** How many acquisitions in this process wait for a release of lock {@code name}. */
    int localWaiters(String name) {
        return redis.notices().waiters(LockKeys.releaseChannel(redis.keys().lockKey(name)));
    }

    /** {@code script}, sent at subscription, for {@code call}: failing if no reply comes within the command timeout. */
    Mono<Long> command(Call call, LuaScript script, String[] keys, String... args) {
        return redis.command(call.request.timers(), script, keys, args);
    }

    @Override
    public String toString() {
        return "RedisStore{" + redis.options() + "}";
    }
}
