package io.reactivelock.spi;

import io.reactivelock.LockLease;
import io.reactivelock.LockListener;
import io.reactivelock.MultiLockLease;
import io.reactivelock.ReactiveLock;
import io.reactivelock.ReactiveMultiLock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiFunction;
import java.util.function.Function;
import reactor.core.publisher.Mono;

/**
 * {@code withLocks} on a {@link LockCore}: one acquisition of the core holds every name, and the
 * core knows it by the sorted names ({@link #display}), which is what listeners hear.
 */
final class MultiLocks {

    private MultiLocks() {}

    /**
     * Checks the arguments now (see {@link ReactiveMultiLock}); each subscription then opens its
     * store call with {@code open}, given the names sorted, and once every name is held gives the
     * body a lease whose fencing tokens {@code fencingTokens} reads from that call and the core's lease.
     */
    static <C, T> Mono<T> withLocks(LockCore<C> core, Collection<String> names, Duration ttl, Duration acquireTimeout,
            BiFunction<Request, List<String>, C> open,
            BiFunction<C, LockLease, Map<String, Long>> fencingTokens,
            Function<? super MultiLockLease, ? extends Mono<T>> body) {
        List<String> sorted = checkNames(names, core.listener());
        String display = display(sorted);
        Arguments.checkCall(display, ttl, body, core.options(), core.listener(), () -> {});
        return Mono.defer(() -> {
            AtomicReference<C> opened = new AtomicReference<>();
            return core.withLock(display, ttl, acquireTimeout, a -> {
                C call = open.apply(a, sorted);
                opened.set(call);
                return call;
            }, lease -> body.apply(new MultiLease(lease, sorted,
                    fencingTokens.apply(Objects.requireNonNull(opened.get()), lease))));
        });
    }

    /** The names checked and sorted; a failure is told to {@code listener}, then thrown. */
    static List<String> checkNames(Collection<String> names, LockListener listener) {
        try {
            Objects.requireNonNull(names, "names");
            if (names.isEmpty() || names.size() > ReactiveMultiLock.MAX_NAMES) {
                throw new IllegalArgumentException("names must have 1 to " + ReactiveMultiLock.MAX_NAMES
                        + " elements, got " + names.size());
            }
            List<String> sorted = new ArrayList<>(names.size());
            for (String name : names) {
                sorted.add(Arguments.checkName(Objects.requireNonNull(name, "names must not contain null")));
            }
            sorted.sort(null);
            for (int i = 1; i < sorted.size(); i++) {
                if (sorted.get(i).equals(sorted.get(i - 1))) {
                    throw new IllegalArgumentException("names must not repeat a name, got '" + sorted.get(i) + "' twice");
                }
            }
            return List.copyOf(sorted);
        } catch (RuntimeException e) {
            listener.acquireFailed(String.valueOf(names), e, Duration.ZERO);
            throw e;
        }
    }

    /**
     * The name the core, its listener and its errors know an acquisition of {@code sorted} by:
     * {@code "[a, b]"}, cut short with the count of names if longer than a lock name may be.
     */
    static String display(List<String> sorted) {
        String all = sorted.toString();
        if (all.length() <= ReactiveLock.MAX_NAME_LENGTH) {
            return all;
        }
        String end = "... (" + sorted.size() + " names)]";
        int cut = ReactiveLock.MAX_NAME_LENGTH - end.length();
        if (Character.isHighSurrogate(all.charAt(cut - 1))) {
            cut--; // a pair cut in two would be an invalid name
        }
        return all.substring(0, cut) + end;
    }

    /** The lease of a multi-lock: the core's lease (token, validity) with a fencing token per name. */
    private record MultiLease(LockLease lease, List<String> names, Map<String, Long> fencingTokens)
            implements MultiLockLease {

        @Override
        public String token() {
            return lease.token();
        }

        @Override
        public long fencingToken(String name) {
            Long token = fencingTokens.get(name);
            if (token == null) {
                throw new IllegalArgumentException("'" + name + "' is not one of the names held: " + names);
            }
            return token;
        }

        @Override
        public long validUntilNanos() {
            return lease.validUntilNanos();
        }

        @Override
        public String toString() {
            return "MultiLockLease{names=" + names + ", fencingTokens=" + fencingTokens + ", remaining=" + remaining() + "}";
        }
    }
}
