package io.reactivelock;

import java.util.Objects;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * One event of a {@link LeaderElection}: this instance became leader of a name for a term, or its
 * term ended. Each term is told twice, with the same {@link #term()}: {@link State#ELECTED} when it
 * starts, then {@link State#STEPPED_DOWN} or {@link State#LOST} when it ends (nothing is told when
 * the subscriber cancels).
 *
 * <p>An event says what happened; it is not a live flag. While the term lasts, the lease says how
 * long leadership is known to be valid ({@code lease().remaining()}); pass {@link #term()} along with
 * the leader's writes so that a resource can refuse a leader whose term has ended, as with the
 * fencing token of a lock.
 */
public final class Leadership {

    /** What the event says. */
    public enum State {
        /** This instance is leader from now on, for the term {@link Leadership#term()}. */
        ELECTED,
        /** The term ended by {@link Leadership#stepDown()}, or because the leader's work completed; the lock is released. */
        STEPPED_DOWN,
        /**
         * The term ended against the leader's will: the lease was lost (found gone or taken at a
         * renewal, or Redis unreachable until it ran out: {@link LockLostException}), or the term
         * reached the lock's maximum lease time ({@link LeaseTimeExceededException}); see {@link #cause()}.
         */
        LOST
    }

    private final LockLease lease;
    private final State state;
    private final @Nullable LockException cause;
    /** Completed by {@link #stepDown()}; shared by the events of one term. */
    private final Sinks.Empty<Void> stepDown;

    private Leadership(LockLease lease, State state, @Nullable LockException cause, Sinks.Empty<Void> stepDown) {
        this.lease = lease;
        this.state = state;
        this.cause = cause;
        this.stepDown = stepDown;
    }

    /** The start of a term held with {@code lease}. */
    static Leadership elected(LockLease lease) {
        return new Leadership(Objects.requireNonNull(lease, "lease"), State.ELECTED, null, Sinks.empty());
    }

    /** The end of this term. */
    Leadership ended(State how, @Nullable LockException why) {
        return new Leadership(lease, how, why, stepDown);
    }

    /** Completes when {@link #stepDown()} is called for this term. */
    Mono<Void> steppedDown() {
        return stepDown.asMono();
    }

    /** The name the candidates campaign for: the lock's name. */
    public String name() {
        return lease.name();
    }

    /**
     * The term: the fencing token of the lock held for it, above every earlier term of the name
     * (while the name's fencing record lives; see the README's "Fencing tokens").
     *
     * @throws UnsupportedOperationException on a lock without fencing tokens
     *     ({@link io.reactivelock.redis.ReactiveRedlock}): see {@link LockLease#fencingToken()}
     */
    public long term() {
        return lease.fencingToken();
    }

    /** The lease of the lock held for this term: its token, fencing token and how long it is known to be valid. */
    public LockLease lease() {
        return lease;
    }

    /** What this event says. */
    public State state() {
        return state;
    }

    /** Whether this event says that this instance became leader: {@code state() == ELECTED}. */
    public boolean isLeader() {
        return state == State.ELECTED;
    }

    /**
     * Why a {@link State#LOST} term ended: {@link LockLostException} or
     * {@link LeaseTimeExceededException}; {@code null} for the other states.
     */
    public @Nullable LockException cause() {
        return cause;
    }

    /**
     * Gives up this term: from this call on the instance must no longer act as leader. The lock is
     * released, {@link State#STEPPED_DOWN} is told once it is, and the instance sits out one TTL
     * before it campaigns again, so that another candidate takes over. Does nothing once the term
     * has ended; may be called from any thread, and from any event of the term.
     */
    public void stepDown() {
        stepDown.tryEmitEmpty();
    }

    @Override
    public String toString() {
        return "Leadership{name='" + name() + "', state=" + state
                + (lease.hasFencingToken() ? ", term=" + lease.fencingToken() : "")
                + (cause == null ? "" : ", cause=" + cause.getMessage()) + "}";
    }
}
