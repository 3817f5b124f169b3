package io.reactivelock.internal;

import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import java.time.Duration;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
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
 */
public final class ReleaseNotices {

    private static final Logger log = Loggers.getLogger(ReleaseNotices.class);

    private final StatefulRedisPubSubConnection<String, String> connection;
    private final ConcurrentHashMap<String, Channel> channels = new ConcurrentHashMap<>();

    public ReleaseNotices(StatefulRedisPubSubConnection<String, String> connection) {
        this.connection = connection;
        connection.addListener(new RedisPubSubAdapter<>() {
            @Override
            public void message(String channel, String message) {
                deliver(channel, message);
            }
        });
    }

    /** Starts waiting on {@code channel} for the acquisition of {@code token}; {@link Waiter#leave()} ends it. */
    public Waiter join(String channel, String token) {
        Waiter waiter = new Waiter(channel, token);
        channels.compute(channel, (name, existing) -> {
            Channel c = existing;
            if (c == null) {
                c = new Channel();
                connection.async().subscribe(name).exceptionally(e -> {
                    log.debug("Could not subscribe to {}; waiters fall back to polling", name, e);
                    return null;
                });
            }
            c.waiters.add(waiter);
            return c;
        });
        return waiter;
    }

    /** How many channels have local waiters; for tests and metrics. */
    public int channelsWithWaiters() {
        return channels.size();
    }

    private void deliver(String channel, String message) {
        Channel c = channels.get(channel);
        if (c == null) {
            return;
        }
        if (message.isEmpty()) {
            for (Waiter w : c.waiters) {
                if (w.wake()) {
                    return;
                }
            }
            c.unclaimedNotice.set(true); // nobody asleep: the next waiter to sleep retries at once
        } else {
            for (Waiter w : c.waiters) {
                if (w.token.equals(message)) {
                    w.handedOver.set(true);
                    w.wake();
                    return;
                }
            }
        }
    }

    private static final class Channel {
        final Queue<Waiter> waiters = new ConcurrentLinkedQueue<>();
        final AtomicBoolean unclaimedNotice = new AtomicBoolean();
    }

    /** One acquisition's membership of a channel. */
    public final class Waiter {
        private final String channel;
        private final String token;
        private final AtomicReference<Sinks.@Nullable Empty<Void>> asleep = new AtomicReference<>();
        private final AtomicBoolean handedOver = new AtomicBoolean();
        private final AtomicBoolean left = new AtomicBoolean();

        private Waiter(String channel, String token) {
            this.channel = channel;
            this.token = token;
        }

        /** Completes when a release is announced, or after {@code step} at the latest. */
        public Mono<Void> sleep(Duration step, Scheduler scheduler) {
            return Mono.defer(() -> {
                Sinks.Empty<Void> alarm = Sinks.empty();
                asleep.set(alarm);
                Channel c = channels.get(channel);
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
            channels.computeIfPresent(channel, (name, c) -> {
                c.waiters.remove(this);
                if (!c.waiters.isEmpty()) {
                    return c;
                }
                connection.async().unsubscribe(name);
                return null;
            });
        }
    }
}
