package io.reactivelock.redis;

import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import java.time.Duration;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;
import reactor.util.Logger;
import reactor.util.Loggers;
import io.reactivelock.spi.LockStore;
import io.reactivelock.spi.Request;
import io.reactivelock.spi.Tokens;
import io.reactivelock.spi.Waiter;

/**
 * Wakes waiting acquisitions when a release is announced, instead of letting them poll.
 *
 * <p>One pub/sub connection serves every waiter of a lock instance. A lock's channel is subscribed
 * while at least one local waiter is on it, and for a linger time after the last one left, so that
 * a process that takes the same lock again and again (a job per lock, one waiter per process)
 * neither subscribes and unsubscribes each time nor polls while a new subscription is confirmed.
 * Who joins or leaves only records it; one thread at a
 * time per channel then brings Redis in line (SUBSCRIBE or UNSUBSCRIBE, each sent after the
 * previous one completed), so the commands reach Redis in order and no map lock is held across a
 * write. A subscription Redis refuses (an outage, a missing ACL channel) is logged, the first
 * time as a warning, and sent again when the next waiter joins; meanwhile waiters poll.
 *
 * <p>Each instance has an {@linkplain #address() address}, which the tokens of its acquisitions
 * end with. On an {@code addressed} channel (a lock's: its notices carry the token of the waiter
 * a release keeps the lock for) it subscribes the channel followed by that address, to which the
 * release publishes the token: Redis writes each notice to the one connection that wants it, not
 * to every client waiting on the lock. Other channels (the semaphore's, the read-write lock's)
 * are subscribed as they are.
 *
 * <p>An empty notice wakes the local waiter that has waited longest, not all of them; a notice
 * carrying a token wakes that waiter only (a release keeps the lock for it), and
 * {@link #EVERYONE} wakes them all. Notices are hints: the local waiter that has waited longest
 * ({@link #isFirst}) keeps trying at its backoff step, so a lost notice or a holder that died
 * costs at most one step (and a lost notice that carried a token, the lock kept for its waiter
 * until the release's grace period ends or that waiter's next try claims it); the others wait to
 * be woken (by a notice, a hand-off, or the first leaving without the lock) and call Redis only
 * to keep their place.
 *
 * <p>A releasing holder may also {@linkplain #reserveLongestWaiting reserve} the local waiter that
 * has waited longest and hand the lock straight to it. A run of such hand-offs on one channel can
 * be limited in time; the ordinary release that ends it gives waiters in other processes their
 * chance.
 *
 * <p>One instance per client: every primitive's waiters share its connection and its channels, so
 * a lock and a multi-lock waiting on the same name share one subscription.
 */
final class ReleaseNotices {

    private static final Logger log = Loggers.getLogger(ReleaseNotices.class);
    private static final long NO_RUN = Long.MIN_VALUE;

    /** The notice that wakes every local waiter on its channel (a release that may let in all of them); never a token. */
    public static final String EVERYONE = "*";

    private final StatefulRedisPubSubConnection<String, String> connection;
    private final ConcurrentHashMap<String, Channel> channels = new ConcurrentHashMap<>();
    private final AtomicBoolean warned = new AtomicBoolean();
    private final long lingerNanos;
    private final String address = ":" + Tokens.next().substring(0, 8);

    /** Notices on {@code connection}; a channel stays subscribed {@code linger} after its last waiter left. */
    public ReleaseNotices(StatefulRedisPubSubConnection<String, String> connection, Duration linger) {
        this.connection = connection;
        this.lingerNanos = linger.toNanos();
        connection.addListener(new RedisPubSubAdapter<>() {
            @Override
            public void message(String channel, String message) {
                deliver(channel.endsWith(address) ? channel.substring(0, channel.length() - address.length()) : channel,
                        message);
            }
        });
    }

    /**
     * What the tokens of this instance's acquisitions end with ({@link io.reactivelock.spi.Tokens#next(String)}),
     * and its {@code addressed} channels' subscriptions too: a colon and 8 random hex digits.
     */
    String address() {
        return address;
    }

    /**
     * Starts waiting on {@code channel} for the acquisition {@code request}, whose state in
     * {@code store} is {@code call}; {@link Member#leave()} ends it. On an {@code addressed}
     * channel this instance hears only the notices for its own waiters (see the class comment).
     */
    Member join(String channel, boolean addressed, Request request, Object call, LockStore<?> store) {
        Member waiter = new Member(this, channel, request, call, store);
        Channel c = channels.compute(channel, (name, existing) -> {
            Channel joined = existing == null ? new Channel(addressed ? name + address : name) : existing;
            joined.waiters.add(waiter);
            joined.refused = false; // a joining waiter tries a refused subscription again
            return joined;
        });
        reconcile(channel, c);
        return waiter;
    }

    /**
     * Reserves the local waiter of {@code store} on {@code channel} that has waited longest and is
     * not reserved yet, for a hand-off (a waiter of another primitive on the same name cannot take it). Returns null when there is none, or when the run of hand-offs on this channel
     * started at least {@code maxRun} ago ({@code null}: no limit); the next run starts with the
     * next hand-off after that.
     */
    @Nullable Member reserveLongestWaiting(String channel, @Nullable Duration maxRun, LockStore<?> store) {
        Channel c = channels.get(channel);
        if (c == null) {
            return null;
        }
        if (maxRun != null) {
            long now = System.nanoTime();
            long started = c.runStartedNanos.get();
            if (started == NO_RUN) {
                c.runStartedNanos.compareAndSet(NO_RUN, now);
            } else if (now - started >= maxRun.toNanos()) {
                c.runStartedNanos.set(NO_RUN);
                return null;
            }
        }
        for (Member w : c.waiters) {
            if (w.store == store && !w.left.get() && w.reserved.compareAndSet(false, true)) {
                return w;
            }
        }
        c.runStartedNanos.set(NO_RUN);
        return null;
    }

    /**
     * Whether {@code waiter} has waited longest of this process's waiters on its channel: the one
     * that keeps trying while the others wait to be woken.
     */
    public boolean isFirst(Member waiter) {
        Channel c = channels.get(waiter.channel);
        return c != null && c.waiters.peek() == waiter;
    }

    /** Ends the pause of the local waiter on {@code channel} that has waited longest, if it is pausing. */
    public void wakeFirst(String channel) {
        Channel c = channels.get(channel);
        Member first = c == null ? null : c.waiters.peek();
        if (first != null) {
            first.waiter.wakeIfPaused();
        }
    }

    /**
     * Notes that a release by this instance kept the lock of {@code channel} for a sleeper, of
     * whichever process: this instance's next acquisition of it will find it busy. Kept while the
     * channel is (its waiters, then its linger), until {@link #takeKeptForSleeper} reads it.
     */
    void keptForSleeper(String channel) {
        Channel c = channels.get(channel);
        if (c != null) {
            c.keptForSleeper = true;
        }
    }

    /** Whether a release by this instance kept the lock of {@code channel} for a sleeper since the last call. */
    boolean takeKeptForSleeper(String channel) {
        Channel c = channels.get(channel);
        if (c == null || !c.keptForSleeper) {
            return false;
        }
        c.keptForSleeper = false;
        return true;
    }

    /** How many channels this instance keeps state for: subscribed, lingering, or being brought in line. */
    int channels() {
        return channels.size();
    }

    /** How many local waiters {@code channel} has. */
    public int waiters(String channel) {
        Channel c = channels.get(channel);
        return c == null ? 0 : c.waiters.size();
    }

    /**
     * Whether Redis confirmed the subscription of {@code channel} and no unsubscribe was sent since:
     * every release of its lock now reaches this process.
     */
    public boolean listening(String channel) {
        Channel c = channels.get(channel);
        return c != null && c.listening;
    }

    private void deliver(String channel, String message) {
        Channel c = channels.get(channel);
        if (c == null) {
            return;
        }
        if (EVERYONE.equals(message)) {
            c.waiters.forEach(w -> w.waiter.wake());
        } else if (message.isEmpty()) {
            for (Member w : c.waiters) {
                if (w.waiter.wakeIfPaused()) {
                    return;
                }
            }
            Member first = c.waiters.peek();
            if (first != null) {
                first.waiter.wake(); // nobody paused: the first skips its next pause
            }
        } else {
            for (Member w : c.waiters) {
                if (w.token.equals(message)) {
                    w.waiter.wake();
                    return;
                }
            }
        }
    }

    /** Brings the channel's subscription in line with its waiters, one command at a time. */
    private void reconcile(String name, Channel c) {
        if (c.wip.getAndIncrement() == 0) {
            drain(name, c, 1);
        }
    }

    private void drain(String name, Channel c, int missed) {
        int todo = missed;
        while (true) {
            // A channel object no longer in the map (removed while a late leave made it linger) must not
            // subscribe: its later unsubscribe would silence the channel object that replaced it.
            boolean want = (!c.waiters.isEmpty() || c.lingering) && !c.refused && channels.get(name) == c;
            if (want != c.subscribed) {
                c.subscribed = want;
                if (!want) {
                    c.listening = false; // notices may stop as soon as the UNSUBSCRIBE is on its way
                }
                int done = todo;
                CompletionStage<Void> sent;
                try {
                    sent = want ? connection.async().subscribe(c.subscription) : connection.async().unsubscribe(c.subscription);
                } catch (RuntimeException e) {
                    // Lettuce throws, rather than failing the command, once the client's resources are
                    // shut down: a linger that ends after the client closed.
                    sent = CompletableFuture.failedFuture(e);
                }
                sent.whenComplete((ok, e) -> {
                    if (want && e == null) {
                        c.listening = true;
                    } else if (want) {
                        c.subscribed = false;
                        c.refused = true;
                        refused(c.subscription, e);
                    }
                    int more = c.wip.addAndGet(-done);
                    if (more != 0) {
                        drain(name, c, more);
                    } else {
                        removeIfIdle(name, c);
                    }
                });
                return;
            }
            todo = c.wip.addAndGet(-todo);
            if (todo == 0) {
                removeIfIdle(name, c);
                return;
            }
        }
    }

    private void removeIfIdle(String name, Channel c) {
        channels.computeIfPresent(name, (n, existing) -> existing == c && c.waiters.isEmpty() && !c.subscribed
                && c.wip.get() == 0 ? null : existing);
    }

    private void refused(String name, Throwable error) {
        if (warned.compareAndSet(false, true)) {
            log.warn("Redis refused the subscription to {}; waiters poll with backoff until the next waiter joins "
                    + "(logged once, then at debug)", name, error);
        } else {
            log.debug("Redis refused the subscription to {}", name, error);
        }
    }

    private static final class Channel {
        /** The channel subscribed in Redis: the name, followed by the instance's address if addressed. */
        final String subscription;
        final Queue<Member> waiters = new ConcurrentLinkedQueue<>();
        /** Joins and leaves not yet brought in line with Redis. */
        final AtomicInteger wip = new AtomicInteger();
        /** When the current run of local hand-offs started ({@link System#nanoTime()}), or {@link #NO_RUN}. */
        final AtomicLong runStartedNanos = new AtomicLong(NO_RUN);
        /** The last command sent was a SUBSCRIBE; changed only by the one thread draining {@link #wip}. */
        volatile boolean subscribed;
        /** Redis refused the last SUBSCRIBE; cleared when a waiter joins. */
        volatile boolean refused;
        /** Redis confirmed the subscription, and no UNSUBSCRIBE was sent since. */
        volatile boolean listening;
        /** A release by this instance kept the lock for a sleeper ({@link #keptForSleeper}). */
        volatile boolean keptForSleeper;
        /** The last waiter left less than the linger time ago: the subscription is kept. */
        volatile boolean lingering;
        /** Counts the times the channel was left without waiters; a linger ends only if it is the last one. */
        final AtomicLong emptied = new AtomicLong();

        Channel(String subscription) {
            this.subscription = subscription;
        }
    }

    /** One acquisition's membership of a channel. */
    static final class Member {
        private final ReleaseNotices notices;
        private final String channel;
        private final Waiter waiter;
        private final String token;
        private final Scheduler timers;
        private final Object call;
        private final LockStore<?> store;
        private final AtomicBoolean reserved = new AtomicBoolean();
        private final AtomicBoolean left = new AtomicBoolean();

        private Member(ReleaseNotices notices, String channel, Request request, Object call, LockStore<?> store) {
            this.notices = notices;
            this.channel = channel;
            this.waiter = request.waiter();
            this.token = request.token();
            this.timers = request.timers();
            this.call = call;
            this.store = store;
        }

        /** The store's handle on the waiting acquisition. */
        Waiter waiter() {
            return waiter;
        }

        /** The waiting acquisition's state in its store (a hand-off needs its keys and token). */
        Object call() {
            return call;
        }

        /** Ends a {@linkplain #reserveLongestWaiting reservation}; another hand-off may reserve it again. */
        public void unreserve() {
            reserved.set(false);
        }

        /**
         * Stops waiting; the last waiter of a channel has it unsubscribed after the linger time. A first waiter that leaves
         * without the lock wakes the next, which keeps trying in its place. Idempotent.
         */
        public void leave() {
            if (!left.compareAndSet(false, true)) {
                return;
            }
            Channel c = notices.channels.get(channel);
            if (c == null) {
                return;
            }
            boolean wasFirst = c.waiters.peek() == this;
            if (c.waiters.remove(this)) {
                if (wasFirst && waiter.hasEnded()) {
                    notices.wakeFirst(channel);
                }
                if (c.waiters.isEmpty() && notices.lingerNanos > 0) {
                    long emptied = c.emptied.incrementAndGet();
                    c.lingering = true;
                    timers.schedule(() -> {
                        if (c.emptied.get() == emptied) {
                            c.lingering = false;
                            notices.reconcile(channel, c);
                        }
                    }, notices.lingerNanos, TimeUnit.NANOSECONDS);
                }
                notices.reconcile(channel, c);
            }
        }
    }
}
