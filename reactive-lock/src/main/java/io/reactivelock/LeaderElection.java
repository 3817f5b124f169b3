package io.reactivelock;

import io.reactivelock.LockAcquisitionException.Reason;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxSink;
import reactor.core.publisher.Mono;
import reactor.util.context.Context;

/**
 * Leader election on a {@link ReactiveLock}, for the "one instance runs the job" case: of the
 * candidates that campaign for one name, in any number of processes, the leader is the one that
 * holds the lock of that name, and its term is the lock's fencing token.
 *
 * <pre>{@code
 * LeaderElection election = LeaderElection.of(ReactiveRedisLock.create(uri));
 *
 * // Runs the job on one instance at a time; cancelled there when its leadership is lost.
 * Flux<Report> built = election.whileLeader("nightly-report", Duration.ofSeconds(10), leadership ->
 *         Flux.interval(Duration.ofMinutes(1)).concatMap(tick -> reports.build(leadership.term())));
 * }</pre>
 *
 * <h2>Contract of {@code lead}</h2>
 * <ul>
 *   <li><b>Cold.</b> Each subscription is a candidate. It campaigns with one {@code withLock} that
 *       waits for the lock without a deadline (renewed attempts, release notices: whatever the lock
 *       does), so a candidate costs one pending acquisition and no polling of its own.
 *   <li><b>Elected.</b> When the lock is granted, the candidate is leader: {@link Leadership.State#ELECTED},
 *       with the lease and the term. The lease is renewed while the candidate leads.
 *   <li><b>Lost.</b> When the lease is lost (found gone or taken at a renewal, or Redis unreachable
 *       until the lease runs out) or the term reaches the lock's maximum lease time:
 *       {@link Leadership.State#LOST} with the cause, then the candidate campaigns again at once.
 *       A term therefore lasts at most {@link LockOptions#maxLeaseTime()}: give the lock used for
 *       leadership the longest term you want.
 *   <li><b>Step down.</b> {@link Leadership#stepDown()} releases the lock; once it is released,
 *       {@link Leadership.State#STEPPED_DOWN}; then the candidate sits out one TTL before it
 *       campaigns again, so that a waiting candidate takes over.
 *   <li><b>Cancelled.</b> Cancelling the subscription ends the candidate: its campaign is cancelled
 *       or its lock released at once (in the background, as {@code withLock} does on cancel), so
 *       another candidate takes over without waiting for the lease to run out. Nothing more is told.
 *   <li><b>Fails</b> only when campaigning cannot go on: the lock was closed
 *       ({@link LockClosedException}), has too many pending acquisitions
 *       ({@link TooManyPendingAcquisitionsException}), or Redis answers an error that retrying cannot
 *       mend ({@link LockAcquisitionException} with {@link Reason#REDIS_ERROR}, such as {@code NOPERM}).
 * </ul>
 *
 * <p>What "one leader" means is what the lock guarantees: at most one candidate holds a valid
 * lease at a time. A leader that pauses past its lease (a long GC) still believes it leads when it
 * wakes, until its next renewal; pass the term with its writes and let the resource refuse stale
 * terms. Works on every {@link ReactiveLock} of the library; a lock without fencing tokens
 * ({@link io.reactivelock.redis.ReactiveRedlock}) gives leadership without terms.
 *
 * <h2>Arguments</h2>
 * The name and the TTL are checked by the lock when {@code lead} or {@code whileLeader} is called,
 * as {@code withLock} checks them; a {@code null} work function throws {@link NullPointerException}.
 */
public final class LeaderElection {

    /** How long a campaign waits for the lock: a year stands for "until cancelled". */
    private static final Duration CAMPAIGN = Duration.ofDays(365);

    /** Acquisition failures after which a candidate campaigns again rather than giving up. */
    private static final Set<Reason> PASSING = EnumSet.of(Reason.BUSY, Reason.REDIS_UNAVAILABLE, Reason.QUORUM_NOT_REACHED);

    private final ReactiveLock lock;

    private LeaderElection(ReactiveLock lock) {
        this.lock = lock.withAcquireTimeout(CAMPAIGN);
    }

    /** Elections on the names of {@code lock}: a Redis lock (fair or not), a Redlock, the in-memory double, a decorator. */
    public static LeaderElection of(ReactiveLock lock) {
        return new LeaderElection(Objects.requireNonNull(lock, "lock"));
    }

    /**
     * Campaigns for {@code name} until cancelled, and tells each term this candidate leads: see the
     * {@linkplain LeaderElection contract}.
     *
     * @param name the lock name the candidates campaign for
     * @param ttl the lease of a term: how long a leader that stops renewing (crashed, frozen) keeps
     *     the others out; also how long a candidate sits out after stepping down
     * @return a cold {@code Flux} of the start and the end of each term
     */
    public Flux<Leadership> lead(String name, Duration ttl) {
        return campaign(name, ttl, elected -> Mono.just(elected).concatWith(Mono.never()), ended -> ended);
    }

    /**
     * Campaigns for {@code name} until cancelled, and runs {@code work} during each term this
     * candidate leads, emitting its values:
     * <ul>
     *   <li>the work is subscribed when the candidate is elected, inside the lock's body, so the
     *       lock's guarantees hold for it: it is cancelled when the lease is lost (then the
     *       candidate campaigns again), and before the lock is released when the subscriber cancels;
     *   <li>the work completing, or {@link Leadership#stepDown()}, ends the term as a step-down:
     *       the lock is released and the candidate sits out one TTL before it campaigns again;
     *   <li>the work failing fails the {@code Flux} with its error once the lock is released.
     * </ul>
     * The work's values are buffered when the subscriber is slower than the work: its demand does
     * not reach the work.
     *
     * @param work what the leader does during a term, given the term's {@link Leadership}
     * @return a cold {@code Flux} of the values of the work, over every term
     */
    public <T> Flux<T> whileLeader(String name, Duration ttl, Function<? super Leadership, ? extends Publisher<T>> work) {
        Objects.requireNonNull(work, "work");
        return campaign(name, ttl, elected -> Objects.requireNonNull(work.apply(elected), "the work function returned null"),
                ended -> null);
    }

    /**
     * A candidate per subscription: terms of {@code lock}, each running {@code whileLeader} in the
     * lock's body and telling what {@code told} makes of the term's end.
     */
    private <T> Flux<T> campaign(String name, Duration ttl, Function<Leadership, ? extends Publisher<T>> whileLeader,
            Function<Leadership, @Nullable T> told) {
        // Built here so that the lock checks the name and the TTL at call time; the body finds its
        // subscription's candidate in the Reactor context.
        Mono<Void> term = lock.withLock(name, ttl, lease -> Mono.deferContextual(context ->
                context.<Candidate<T>>get(Candidate.class).serve(lease)));
        return Flux.create(sink -> new Candidate<>(name, ttl, whileLeader, told, sink).campaign(term));
    }

    @Override
    public String toString() {
        return "LeaderElection{" + lock + "}";
    }

    /** One subscription: campaigns term after term, and tells its subscriber what happens. */
    private static final class Candidate<T> {
        private final String name;
        private final Duration ttl;
        private final Function<Leadership, ? extends Publisher<T>> whileLeader;
        private final Function<Leadership, @Nullable T> told;
        private final FluxSink<T> sink;
        /** The term under way, from its election until its end is told. */
        private volatile @Nullable Leadership current;

        Candidate(String name, Duration ttl, Function<Leadership, ? extends Publisher<T>> whileLeader,
                Function<Leadership, @Nullable T> told, FluxSink<T> sink) {
            this.name = name;
            this.ttl = ttl;
            this.whileLeader = whileLeader;
            this.told = told;
            this.sink = sink;
        }

        void campaign(Mono<Void> term) {
            Disposable campaigning = term
                    .then(Mono.defer(() -> {
                        tellEnd(Leadership.State.STEPPED_DOWN, null);
                        return Mono.delay(ttl).then(); // sits out one TTL, so that another candidate takes over
                    }))
                    .onErrorResume(this::campaignAgain)
                    .repeat()
                    .contextWrite(sink.contextView())
                    .contextWrite(Context.of(Candidate.class, this))
                    .subscribe(null, sink::error);
            sink.onDispose(campaigning);
        }

        /** The lock's body: the term, until the work ends, the leader steps down, or the lock cancels it. */
        Mono<Void> serve(LockLease lease) {
            Leadership elected = Leadership.elected(lease);
            current = elected;
            return Flux.from(whileLeader.apply(elected))
                    .takeUntilOther(elected.steppedDown())
                    .doOnNext(sink::next)
                    .then();
        }

        /** After a lost lease or an acquisition that gave up: campaigns again, or fails for good. */
        private Mono<Void> campaignAgain(Throwable error) {
            if ((error instanceof LockLostException || error instanceof LeaseTimeExceededException)
                    && name.equals(((LockException) error).lockName())) {
                tellEnd(Leadership.State.LOST, (LockException) error);
                return Mono.empty();
            }
            if (error instanceof LockAcquisitionException failed && PASSING.contains(failed.reason())) {
                return Mono.empty();
            }
            return Mono.error(error);
        }

        private void tellEnd(Leadership.State how, @Nullable LockException why) {
            Leadership term = current;
            current = null;
            if (term != null) {
                T event = told.apply(term.ended(how, why));
                if (event != null) {
                    sink.next(event);
                }
            }
        }
    }
}
