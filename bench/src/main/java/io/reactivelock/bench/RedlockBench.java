package io.reactivelock.bench;

import io.lettuce.core.RedisURI;
import io.reactivelock.LockLease;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.redis.ReactiveRedlock;
import io.reactivelock.redis.RedlockOptions;
import io.reactivelock.support.RedisServer;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import reactor.core.publisher.Mono;

/**
 * Uncontended acquire+release latency of Redlock over 3 and 5 local redis-server processes
 * against the single lock on one of them, same JVM, same run, rounds interleaved so that machine
 * load hits every contender alike. One caller, one lock at a time, so each figure is the time of
 * one {@code withLock} with an empty body: for Redlock a parallel fan-out to every node and back,
 * which should cost about one round trip, not N. For scale, the same N nodes locked one after the
 * other (N single locks nested) show what a sequential protocol would cost.
 *
 * <p>Run with {@code ./mvnw -q -Pbench -pl bench -am verify -Dbench.main=io.reactivelock.bench.RedlockBench}
 * (docs/deployments.md has the commands). Knobs: {@code -Dbench.redlock.ops} (per contender and
 * round, default 2000), {@code -Dbench.redlock.rounds} (default 5), {@code -Dbench.redlock.delayMicros}
 * (default 0: direct; above 0, every node is reached through a {@link LatencyProxy} adding that
 * delay in each direction, as a network would).
 */
public final class RedlockBench {

    private static final Duration TTL = Duration.ofSeconds(10);

    private RedlockBench() {}

    public static void main(String[] args) throws IOException {
        int ops = Integer.getInteger("bench.redlock.ops", 2000);
        int rounds = Integer.getInteger("bench.redlock.rounds", 5);
        long delayMicros = Long.getLong("bench.redlock.delayMicros", 0);
        List<RedisServer> servers = new ArrayList<>();
        Map<String, ReactiveLock> contenders = new LinkedHashMap<>();
        List<AutoCloseable> closeables = new ArrayList<>();
        try {
            for (int i = 0; i < 5; i++) {
                servers.add(RedisServer.start());
            }
            List<RedisURI> uris = new ArrayList<>();
            for (RedisServer server : servers) {
                if (delayMicros > 0) {
                    LatencyProxy proxy = new LatencyProxy(server.port(), delayMicros);
                    closeables.add(proxy);
                    uris.add(RedisURI.create("127.0.0.1", proxy.port()));
                } else {
                    uris.add(server.uri());
                }
            }
            LockOptions options = LockOptions.defaults();
            List<ReactiveRedisLock> singles = new ArrayList<>();
            for (RedisURI uri : uris) {
                singles.add(ReactiveRedisLock.create(uri, options));
            }
            ReactiveRedlock three = ReactiveRedlock.create(uris.subList(0, 3), options, RedlockOptions.defaults());
            ReactiveRedlock five = ReactiveRedlock.create(uris, options, RedlockOptions.defaults());
            closeables.addAll(singles);
            closeables.addAll(List.of(three, five));
            contenders.put("single", singles.get(0));
            contenders.put("redlock N=3", three);
            contenders.put("redlock N=5", five);
            // What a one-node-after-the-other protocol would cost: N single locks nested.
            contenders.put("N=3 one after another", nested(singles.subList(0, 3)));
            contenders.put("N=5 one after another", nested(singles));

            for (ReactiveLock lock : contenders.values()) {
                measure(lock, ops); // JIT warm-up, discarded
            }
            Map<String, List<long[]>> samples = new LinkedHashMap<>();
            Map<String, Long> cpuNanos = new LinkedHashMap<>();
            contenders.keySet().forEach(name -> samples.put(name, new ArrayList<>()));
            for (int round = 0; round < rounds; round++) {
                for (Map.Entry<String, ReactiveLock> contender : contenders.entrySet()) {
                    long cpuBefore = processCpuNanos();
                    samples.get(contender.getKey()).add(measure(contender.getValue(), ops));
                    cpuNanos.merge(contender.getKey(), processCpuNanos() - cpuBefore, Long::sum);
                }
            }

            System.out.printf("Uncontended withLock(empty body) latency, %d ops x %d rounds per contender, "
                    + "%d cores, %d µs added each way%s%n", ops, rounds, Runtime.getRuntime().availableProcessors(),
                    delayMicros, delayMicros > 0 ? " (the CPU column then includes the proxy)" : "");
            System.out.println("| contender | p50 (µs) | p99 (µs) | p50 / single | p99 / single | JVM CPU per op (µs) |");
            System.out.println("|---|---:|---:|---:|---:|---:|");
            long[] base = percentiles(samples.get("single"));
            for (Map.Entry<String, List<long[]>> entry : samples.entrySet()) {
                long[] p = percentiles(entry.getValue());
                System.out.printf("| %s | %.0f | %.0f | %.2f | %.2f | %.0f |%n", entry.getKey(), p[0] / 1e3, p[1] / 1e3,
                        (double) p[0] / base[0], (double) p[1] / base[1],
                        cpuNanos.get(entry.getKey()) / 1e3 / ((long) ops * rounds));
            }
        } finally {
            for (int i = closeables.size() - 1; i >= 0; i--) { // locks first, then the proxies under them
                try {
                    closeables.get(i).close();
                } catch (Exception e) {
                    System.err.println("close failed: " + e);
                }
            }
            servers.forEach(RedisServer::close);
        }
    }

    /** Takes the lock on each of {@code locks} in turn, the body inside the last; releases in reverse. */
    private static ReactiveLock nested(List<ReactiveRedisLock> locks) {
        return new ReactiveLock() {
            @Override
            public <T> Mono<T> withLock(String name, Duration ttl, Function<? super LockLease, ? extends Mono<T>> body) {
                Mono<T> inner = Mono.defer(() -> body.apply(null));
                for (int i = locks.size() - 1; i >= 0; i--) {
                    inner = locks.get(i).withLock(name, ttl, inner);
                }
                return inner;
            }

            @Override
            public <T> reactor.core.publisher.Flux<T> withLockMany(String name, Duration ttl,
                    Function<? super LockLease, ? extends org.reactivestreams.Publisher<T>> body) {
                throw new UnsupportedOperationException("the bench measures withLock");
            }

            @Override
            public ReactiveLock withAcquireTimeout(Duration acquireTimeout) {
                throw new UnsupportedOperationException("the bench uses the options' acquire timeout");
            }
        };
    }

    /** Runs {@code ops} lock-and-release calls one after the other; returns each one's nanoseconds. */
    private static long[] measure(ReactiveLock lock, int ops) {
        long[] nanos = new long[ops];
        Mono<Integer> once = lock.withLock("bench", TTL, Mono.just(1));
        for (int i = 0; i < ops; i++) {
            long start = System.nanoTime();
            once.block();
            nanos[i] = System.nanoTime() - start;
        }
        return nanos;
    }

    /** CPU time used by this JVM so far, all threads (the callers and Lettuce's event loops). */
    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    /** p50 and p99 over all rounds. */
    private static long[] percentiles(List<long[]> rounds) {
        long[] all = rounds.stream().flatMapToLong(Arrays::stream).sorted().toArray();
        return new long[] {all[all.length / 2], all[(int) (all.length * 0.99)]};
    }
}
