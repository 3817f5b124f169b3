package io.reactivelock.internal;

import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import java.time.Duration;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.util.Logger;
import reactor.util.Loggers;

/**
 * Lets waiters sleep until a release is announced instead of polling.
 *
 * <p>One pub/sub connection serves every waiter of a lock instance. A lock's channel is subscribed
 * while at least one local waiter is on it and unsubscribed when the last one leaves; both happen
 * inside the map's atomic update, so subscribe and unsubscribe reach Redis in the order of the
 * updates. An empty notice (non-fair release) wakes the local waiter that has waited longest, not
 * all of them, so a hand-off costs one acquire attempt per JVM rather than a herd; a notice
 * carrying a token (fair hand-off) wakes that waiter only.
 *
 * <p>Notices are hints. Every wait also ends after its backoff step, so a notice lost to a
 * reconnect or a race costs at most one step, never correctness; Lettuce resubscribes the
 * channels after a reconnect.
 *
 * <p>A releasing holder may also {@linkplain #reserveLongestWaiting reserve} the local waiter that
 * has waited longest and hand the lock straight to it. A run of such hand-offs on one channel can
 * be limited in time; the release that ends it is an ordinary one, which gives waiters in other
 * processes their chance, so they cannot starve behind local ones.
 *
 * @param <S> what each waiter stands for (the acquisition a hand-off is delivered to)
 */
public final class ReleaseNotices<S> {

    private static final Logger log = Loggers.getLogger(ReleaseNotices.class);
    private static final long NO_RUN = Long.MIN_VALUE;

    private final StatefulRedisPubSubConnection<String, String> connection;
    private final ConcurrentHashMap<String, Channel<S>> channels = new ConcurrentHashMap<>();

    public ReleaseNotices(StatefulRedisPubSubConnection<String, String> connection) {
        this.connection = connection;
        connection.addListener(new RedisPubSubAdapter<>() {
            @Override
            public void message(String channel, String message) {
                deliver(channel, message);
            }
        });
    }

    /**
     * Starts waiting on {@code channel} for the acquisition of {@code token}, made by {@code owner};
     * {@link Waiter#leave()} ends it.
     */
    public Waiter<S> join(String channel, String token, S owner) {
        Waiter<S> waiter = new Waiter<>(this, channel, token, owner);
        channels.compute(channel, (name, existing) -> {
            Channel<S> c = existing == null ? new Channel<>() : existing;
            if (c.subscribing.compareAndSet(false, true)) { // a new channel, or one whose subscribe failed
                subscribe(name, c);
            }
            c.waiters.add(waiter);
            return c;
        });
        return waiter;
    }

    private void subscribe(String name, Channel<S> c) {
        connection.async().subscribe(name).whenComplete((ok, e) -> {
            if (e == null) {
                c.listening = true;
            } else {
                // Until a later waiter joins and subscribes again, the waiters here poll with backoff.
                c.subscribing.set(false);
                log.debug("Could not subscribe to {}; waiters fall back to polling", name, e);
            }
        });
    }

    /**
     * Reserves the local waiter on {@code channel} that has waited longest and is not reserved yet,
     * for a hand-off. Returns null when there is none, or when the run of hand-offs on this channel
     * started at least {@code maxRun} ago ({@code null}: no limit); the next run starts with the
     * next hand-off after that.
     */
    public @Nullable Waiter<S> reserveLongestWaiting(String channel, @Nullable Duration maxRun) {
        Channel<S> c = channels.get(channel);
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
        for (Waiter<S> w : c.waiters) {
            if (!w.left.get() && w.reserved.compareAndSet(false, true)) {
                return w;
            }
        }
        c.runStartedNanos.set(NO_RUN);
        return null;
    }

    /** How many local waiters {@code channel} has. */
    public int waiters(String channel) {
        Channel<S> c = channels.get(channel);
        return c == null ? 0 : c.waiters.size();
    }

    private void deliver(String channel, String message) {
        Channel<S> c = channels.get(channel);
        if (c == null) {
            return;
        }
        if (message.isEmpty()) {
            for (Waiter<S> w : c.waiters) {
                if (w.wake()) {
                    return;
                }
            }
            c.unclaimedNotice.set(true); // nobody asleep: the next waiter to sleep retries at once
        } else {
            for (Waiter<S> w : c.waiters) {
                if (w.token.equals(message)) {
                    w.handOver();
                    return;
                }
            }
        }
    }

    private static final class Channel<S> {
        final Queue<Waiter<S>> waiters = new ConcurrentLinkedQueue<>();
        final AtomicBoolean unclaimedNotice = new AtomicBoolean();
        /** When the current run of local hand-offs started ({@link System#nanoTime()}), or {@link #NO_RUN}. */
        final AtomicLong runStartedNanos = new AtomicLong(NO_RUN);
        /** Redis confirmed the subscription: from now on every release of this lock is announced here. */
        volatile boolean listening;
        /** A subscribe was sent and has not failed. */
        final AtomicBoolean subscribing = new AtomicBoolean();
    }

    /** One acquisition's membership of a channel. */
    public static final class Waiter<S> {
        private final ReleaseNotices<S> notices;
        private final String channel;
        private final String token;
        private final S owner;
        private final AtomicReference<Sinks.@Nullable Empty<Void>> asleep = new AtomicReference<>();
        private final AtomicBoolean handedOver = new AtomicBoolean();
        private final AtomicBoolean reserved = new AtomicBoolean();
        private final AtomicBoolean left = new AtomicBoolean();

        private Waiter(ReleaseNotices<S> notices, String channel, String token, S owner) {
            this.notices = notices;
            this.channel = channel;
            this.token = token;
            this.owner = owner;
        }

        /** The acquisition this waiter stands for. */
        public S owner() {
            return owner;
        }

        /** Ends a {@linkplain #reserveLongestWaiting reservation}; another hand-off may reserve it again. */
        public void unreserve() {
            reserved.set(false);
        }

        /**
         * Whether Redis confirmed the channel's subscription, so that releases wake this waiter
         * and its backoff steps are only a fallback for lost notices.
         */
        public boolean listening() {
            Channel<S> c = notices.channels.get(channel);
            return c != null && c.listening;
        }

        /** Wakes this waiter for an immediate attempt, even if it is not asleep yet. */
        public void handOver() {
            handedOver.set(true);
            wake();
        }

        /** Completes when a release is announced, or after {@code step} at the latest. */
        public Mono<Void> sleep(Duration step, Scheduler scheduler) {
            return Mono.defer(() -> {
                Sinks.Empty<Void> alarm = Sinks.empty();
                asleep.set(alarm);
                Channel<S> c = notices.channels.get(channel);
                if (handedOver.getAndSet(false) || (c != null && c.unclaimedNotice.getAndSet(false))) {
                    asleep.compareAndSet(alarm, null);
                    return Mono.empty();
                }
                return Mono.firstWithSignal(alarm.asMono(), Mono.delay(step, scheduler).then())
                        .doFinally(signal -> asleep.compareAndSet(alarm, null));
            });
        }

        private boolean wake() {
            Sinks.Empty<Void> alarm = asleep.getAndSet(null);
            return alarm != null && alarm.tryEmitEmpty().isSuccess();
        }

        /** Stops waiting; the last waiter of a channel unsubscribes it. Idempotent. */
        public void leave() {
            if (!left.compareAndSet(false, true)) {
                return;
            }
            notices.channels.computeIfPresent(channel, (name, c) -> {
                c.waiters.remove(this);
                if (!c.waiters.isEmpty()) {
                    return c;
                }
                notices.connection.async().unsubscribe(name);
                return null;
            });
        }
    }
}
