package io.reactivelock.redis;

import io.reactivelock.LockAcquisitionException.Reason;
import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.spi.Backoff;
import io.reactivelock.spi.Lease;
import io.reactivelock.spi.LockCore;
import io.reactivelock.spi.LockStore;
import io.reactivelock.spi.Request;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The Redlock store: each command goes to every node at once and counts as done when a majority
 * agreed. Acquire grants with a validity of ttl - drift and no fencing token; a round without a
 * majority is released on every node, and refused as {@link Reason#BUSY} when the no's alone rule
 * out a majority (another holder has it), else as {@link Reason#QUORUM_NOT_REACHED}. Renewal and
 * release need a majority too; a shortfall is a {@link QuorumShortfall}, which the core retries.
 */
final class RedlockStore implements LockStore<RedlockStore.Call> {

    private final List<LockCommands> nodes;
    private final int quorum;
    private final RedlockOptions redlock;
    private final LockOptions options;
    private final LockKeys keys;
    private final Backoff backoff;
    /** Releases sent and not answered yet, on every node: what {@link #answered()} waits for. */
    private final Set<CompletableFuture<Long>> unanswered = ConcurrentHashMap.newKeySet();

    RedlockStore(List<LockCommands> nodes, LockOptions options, RedlockOptions redlock) {
        this.nodes = List.copyOf(nodes);
        this.quorum = nodes.size() / 2 + 1;
        this.options = options;
        this.redlock = redlock;
        this.keys = new LockKeys(options.keyPrefix());
        this.backoff = new Backoff(options.minBackoff(), options.maxBackoff(), options.jitter());
    }

    /** One acquisition's keys and arguments. */
    record Call(Request request, String[] lockKeys, String[] acquireKeys, String[] acquireArgs,
            String[] releaseArgs, String ttlMillis, long validForNanos) {}

    @Override
    public Call open(Request a) {
        String lockKey = keys.lockKey(a.name());
        String ttl = Long.toString(a.ttl().toMillis());
        // The acquire script also keeps a per-node fencing record; Redlock does not use it, so it
        // lives no longer than the lease.
        return new Call(a, new String[] {lockKey}, new String[] {lockKey, LockKeys.fenceKey(lockKey)},
                new String[] {a.token(), ttl, ttl}, new String[] {a.token(), LockKeys.releaseChannel(lockKey)}, ttl,
                a.ttl().toNanos() - redlock.driftNanos(a.ttl()));
    }

    /** A round ends by itself within the node timeout, whatever the nodes do. */
    @Override
    public @Nullable Duration replyTimeout(Duration commandTimeout) {
        return null;
    }

    @Override
    public void checkTtl(Duration ttl) {
        if (ttl.toNanos() <= redlock.nodeTimeout().toNanos() + redlock.driftNanos(ttl)) {
            throw new IllegalArgumentException("ttl (" + ttl + ") must exceed the node timeout (" + redlock.nodeTimeout()
                    + ") plus the clock drift allowance (" + Duration.ofNanos(redlock.driftNanos(ttl)) + ")");
        }
    }

    @Override
    public CompletionStage<Reply> acquire(Call call, int attempt) {
        List<CompletableFuture<Long>> replies = new ArrayList<>(nodes.size());
        for (LockCommands node : nodes) {
            // A grant on one node for an acquisition that has ended is released on that node, also
            // when it overtook the acquisition's release there (a NOSCRIPT fallback).
            replies.add(send(node, LockScripts.ACQUIRE, call.acquireKeys(), call.acquireArgs()).whenComplete((fence, e) -> {
                if (fence != null && fence > 0 && call.request().waiter().hasEnded()) {
                    releaseOn(node, call);
                }
            }));
        }
        // Done as soon as a majority granted, or refused (then nobody else's answer can change it).
        return collect(replies, round -> round.hasMajority() || round.majorityRefused()).flatMap(round -> {
            if (round.hasMajority()) {
                return Mono.just(Reply.granted(LockLease.NO_FENCING_TOKEN, call.validForNanos()));
            }
            String detail = "it got " + round.count("held by another token");
            Reply refused = round.majorityRefused()
                    ? Reply.refused(Reason.BUSY, detail, null)
                    : Reply.refused(Reason.QUORUM_NOT_REACHED, detail, round.lastError);
            // Released on every node before the reply: the next attempt, with the same token, is then
            // sent after this release on each node's connection and cannot be overtaken by it.
            return releaseOnAll(call).onErrorResume(e -> Mono.empty()).thenReturn(refused);
        }).toFuture();
    }

    @Override
    public Mono<Void> renew(Call call, Lease lease) {
        long sentAt = System.nanoTime();
        List<CompletableFuture<Long>> replies = new ArrayList<>(nodes.size());
        for (LockCommands node : nodes) {
            replies.add(send(node, LockScripts.RENEW, call.lockKeys(), call.request().token(), call.ttlMillis()));
        }
        return collect(replies, Round::hasMajority).flatMap(round -> {
            if (round.hasMajority()) {
                lease.extendTo(sentAt + call.validForNanos());
                return Mono.empty();
            }
            String kept = round.count("no longer held by this token");
            return Mono.error(round.majorityRefused()
                    ? new LockLostException(call.request().name(), "renewal kept it on only " + kept, round.lastError)
                    : new QuorumShortfall("the last renewal kept it on " + kept, round.lastError));
        });
    }

    @Override
    public Mono<Boolean> release(Call call) {
        return releaseOnAll(call).thenReturn(false);
    }

    @Override
    public CompletionStage<?> releaseAbandoned(Call call) {
        return releaseOnAll(call).toFuture();
    }

    /** Completes once a majority answered the release (the lock can be taken again); fails with a {@link QuorumShortfall} otherwise. */
    private Mono<Void> releaseOnAll(Call call) {
        return Mono.defer(() -> {
            List<CompletableFuture<Long>> replies = new ArrayList<>(nodes.size());
            for (LockCommands node : nodes) {
                replies.add(releaseOn(node, call));
            }
            return collect(replies, Round::majorityAnswered);
        }).flatMap(round -> round.majorityAnswered()
                ? Mono.empty()
                : Mono.error(new QuorumShortfall("the release reached " + round.count("not held"), round.lastError)));
    }

    @Override
    public boolean isTransient(Throwable error) {
        return error instanceof QuorumShortfall || RedisErrors.isTransient(error);
    }

    @Override
    public Duration pause(Call call, int attempts) {
        return attempts == 0 ? Duration.ZERO : backoff.step(attempts - 1L);
    }

    /**
     * Completes once every release sent so far has been answered by its node, or the node timeout
     * passed: a release counts as done once a majority answered it, so the connections must not
     * close before the other nodes have it too. The node timeout is on the real clock here, even
     * where the lock's timers run on a virtual one, so that a close never waits on a clock that
     * nobody moves.
     */
    Mono<Void> answered() {
        return Mono.fromFuture(() -> CompletableFuture.allOf(unanswered.toArray(CompletableFuture[]::new)), true)
                .onErrorResume(e -> Mono.empty())
                .timeout(redlock.nodeTimeout(), Mono.empty(), Schedulers.parallel());
    }

    private static CompletableFuture<Long> send(LockCommands node, LuaScript script, String[] keys, String... args) {
        try {
            return node.run(script, keys, args).toCompletableFuture();
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** A release on one node, kept among the {@link #unanswered} until its node answers. */
    private CompletableFuture<Long> releaseOn(LockCommands node, Call call) {
        CompletableFuture<Long> reply = send(node, LockScripts.RELEASE, call.lockKeys(), call.releaseArgs());
        if (!reply.isDone()) {
            unanswered.add(reply);
            reply.whenComplete((value, e) -> unanswered.remove(reply));
        }
        return reply;
    }

    /**
     * Counts the replies as they arrive, until the round has {@code enough}, every node answered,
     * or the node timeout passed (the commands were sent together, so one deadline serves every
     * node); a node silent by then counts as failed. The commands themselves are never cancelled:
     * a node that answers later still runs them, in order.
     *
     * <p>Each reply completes on the event loop of its node's connection, several at once; so a
     * reply (or its error) only becomes a value there, and is counted after {@code take}, whose
     * signals are serial, also against its deadline: each reply is counted exactly once.
     */
    private Mono<Round> collect(List<CompletableFuture<Long>> replies, Predicate<Round> enough) {
        return Mono.defer(() -> {
            Round round = new Round();
            return Flux.fromIterable(replies)
                    .flatMap(reply -> Mono.<Object>fromFuture(reply, true).onErrorResume(Mono::just))
                    .take(redlock.nodeTimeout(), options.scheduler())
                    .doOnNext(round::count)
                    .takeUntil(answer -> enough.test(round))
                    .then(Mono.fromCallable(() -> round.end(replies.size(), enough)));
        });
    }

    /** Too few nodes answered a renewal or a release in time: worth another round while the lease lasts. */
    static final class QuorumShortfall extends RuntimeException {
        private static final long serialVersionUID = 1L;

        QuorumShortfall(String message, @Nullable Throwable cause) {
            super(message, cause, false, false);
        }
    }

    /**
     * The replies to one command sent to every node, counted one at a time (see {@link #collect}):
     * a positive integer is a yes, zero a no, an error or no reply within the node timeout a failure.
     */
    private final class Round {
        private int yes;
        private int no;
        private int failed;
        private @Nullable Throwable lastError;

        /** Counts one node's answer: its reply, or the {@link Throwable} it failed with. */
        void count(Object answer) {
            if (answer instanceof Throwable error) {
                failed++;
                lastError = LockCore.unwrap(error);
            } else if ((Long) answer > 0) {
                yes++;
            } else {
                no++;
            }
        }

        /** Counts the nodes that did not answer in time as failed, unless the round had enough. */
        Round end(int sent, Predicate<Round> enough) {
            int silent = sent - yes - no - failed;
            if (silent > 0 && !enough.test(this)) {
                failed += silent;
                if (lastError == null) {
                    lastError = LockCore.noReplyWithin(redlock.nodeTimeout());
                }
            }
            return this;
        }

        boolean hasMajority() {
            return yes >= quorum;
        }

        /** Whether a majority answered, whatever they said. */
        boolean majorityAnswered() {
            return yes + no >= quorum;
        }

        /** Whether the no's alone rule out a majority, whatever the failed nodes would have said. */
        boolean majorityRefused() {
            return no > nodes.size() - quorum;
        }

        /** E.g. "2 of 5 nodes, needed 3 (1 held by another token, 2 failed or did not answer in time)". */
        String count(String refusal) {
            StringBuilder s = new StringBuilder().append(yes).append(" of ").append(nodes.size())
                    .append(" nodes, needed ").append(quorum);
            if (no > 0 || failed > 0) {
                s.append(" (");
                if (no > 0) {
                    s.append(no).append(' ').append(refusal).append(failed > 0 ? ", " : "");
                }
                if (failed > 0) {
                    s.append(failed).append(" failed or did not answer within ").append(redlock.nodeTimeout().toMillis())
                            .append(" ms");
                }
                s.append(')');
            }
            return s.toString();
        }
    }

    @Override
    public String toString() {
        return "RedlockStore{" + nodes.size() + " nodes, " + options + "}";
    }
}
