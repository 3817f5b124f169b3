package io.reactivelock.bench;

import io.lettuce.core.RedisURI;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveMultiLock;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.redis.ReactiveRedisLock;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.redisson.api.RLockReactive;
import org.redisson.api.RPermitExpirableSemaphoreReactive;
import org.redisson.api.RReadWriteLockReactive;
import org.redisson.api.RedissonClient;
import org.redisson.api.RedissonReactiveClient;
import reactor.core.publisher.Mono;

/**
 * The contenders of the primitives' cells ({@link Scenario#primitives()}): this library's
 * semaphore, read-write lock and multi-lock against Redisson's reactive counterparts. The other
 * contenders have no such primitives and sit these cells out. As in the lock cells, every
 * acquisition is its own owner (a token, or a random Redisson thread id) and the lease is 30 s:
 * ours renewed while the body runs, Redisson's locks by its watchdog, Redisson's permits not at all.
 */
final class Primitives {

    private static final Duration TTL = Duration.ofMillis(Contender.TTL_MILLIS);

    private Primitives() {}

    /** Whether contender {@code id} takes part in {@code scenario}. */
    static boolean runs(Scenario scenario, String id) {
        return !scenario.primitive() || id.equals("ours") || id.equals("redisson");
    }

    /** The name of contender {@code id} in {@code scenario}'s table. */
    static String name(Scenario scenario, String id) {
        if (!scenario.primitive()) {
            return Contenders.IDS.get(id);
        }
        boolean ours = id.equals("ours");
        return switch (scenario.workload) {
            case PERMITS -> ours ? "reactive-lock semaphore(capacity)" : "Redisson RPermitExpirableSemaphoreReactive";
            case READ, WRITE, READ_WRITE -> ours ? "reactive-lock readWriteLock()" : "Redisson RReadWriteLockReactive";
            case LOCKS, LOCKS_SORTED -> ours ? "reactive-lock multiLock()" : "Redisson RedissonMultiLock (reactive)";
            case LOCK -> throw new IllegalArgumentException("not a primitive: " + scenario);
        };
    }

    /** The label of contender {@code id} on the chart's row of a primitive's cell, which names the primitive. */
    static String label(String id) {
        return id.equals("ours") ? "reactive-lock" : "Redisson";
    }

    /**
     * What runs {@code scenario} for contender {@code id}: {@code lock} itself in a lock cell, the
     * primitive of {@code id} in a primitive's cell.
     */
    static Contender contender(Scenario scenario, String id, Contender lock, RedisURI uri) {
        if (!scenario.primitive()) {
            return lock;
        }
        if (!runs(scenario, id)) {
            throw new IllegalArgumentException(id + " has no primitive for " + scenario);
        }
        boolean ours = id.equals("ours");
        String name = name(scenario, id);
        return switch (scenario.workload) {
            case PERMITS -> new Contender(name, false, ours ? () -> new OursSemaphore(uri) : () -> new RedissonSemaphore(uri));
            case READ, WRITE, READ_WRITE -> new Contender(name, false,
                    ours ? () -> new OursReadWrite(uri) : () -> new RedissonReadWrite(uri));
            case LOCKS, LOCKS_SORTED -> new Contender(name, false, ours ? () -> new OursMulti(uri) : () -> new RedissonMulti(uri));
            case LOCK -> throw new IllegalArgumentException("not a primitive: " + scenario);
        };
    }

    /** {@code semaphore(capacity).withPermit(name, 30 s, body)}: a view per call, nothing to set up. */
    static final class OursSemaphore implements Contender.Instance {
        private final ReactiveRedisLock client;

        OursSemaphore(RedisURI uri) {
            client = ReactiveRedisLock.create(uri, LockOptions.defaults());
        }

        @Override
        public Mono<Void> run(Workload.Acquisition what, Mono<Void> body) {
            return client.semaphore(what.capacity()).withPermit(what.name(), TTL, body);
        }

        @Override
        public void close() {
            client.close();
        }
    }

    /** {@code withReadLock} or {@code withWriteLock(name, 30 s, body)}. */
    static final class OursReadWrite implements Contender.Instance {
        private final ReactiveRedisLock client;
        private final ReactiveReadWriteLock lock;

        OursReadWrite(RedisURI uri) {
            client = ReactiveRedisLock.create(uri, LockOptions.defaults());
            lock = client.readWriteLock();
        }

        @Override
        public Mono<Void> run(Workload.Acquisition what, Mono<Void> body) {
            return what.kind() == Workload.Kind.WRITE
                    ? lock.withWriteLock(what.name(), TTL, body)
                    : lock.withReadLock(what.name(), TTL, body);
        }

        @Override
        public void close() {
            client.close();
        }
    }

    /** {@code withLocks(names, 30 s, body)}, the names in the order drawn (which does not matter to it). */
    static final class OursMulti implements Contender.Instance {
        private final ReactiveRedisLock client;
        private final ReactiveMultiLock locks;

        OursMulti(RedisURI uri) {
            client = ReactiveRedisLock.create(uri, LockOptions.defaults());
            locks = client.multiLock();
        }

        @Override
        public Mono<Void> run(Workload.Acquisition what, Mono<Void> body) {
            return locks.withLocks(what.names(), TTL, body);
        }

        @Override
        public void close() {
            client.close();
        }
    }

    /** One Redisson client per instance, as {@link Contenders.RedissonLock}. */
    abstract static class RedissonInstance implements Contender.Instance {
        final RedissonClient client;
        final RedissonReactiveClient reactive;

        RedissonInstance(RedisURI uri) {
            client = Contenders.redisson(uri);
            reactive = client.reactive();
        }

        @Override
        public void close() {
            client.shutdown(0, 5, TimeUnit.SECONDS);
        }
    }

    /**
     * {@code acquire(30 s lease)}, the body, {@code release(permitId)}. The capacity is a counter
     * stored in Redis that {@code trySetPermits} must create before first use (done here once per
     * name and instance, before the measured window); the lease is not renewed, so a body that
     * outlives it loses its permit without being told.
     */
    static final class RedissonSemaphore extends RedissonInstance {
        private final Map<String, Mono<RPermitExpirableSemaphoreReactive>> semaphores = new ConcurrentHashMap<>();

        RedissonSemaphore(RedisURI uri) {
            super(uri);
        }

        @Override
        public Mono<Void> run(Workload.Acquisition what, Mono<Void> body) {
            return semaphores.computeIfAbsent(what.name(), name -> {
                        RPermitExpirableSemaphoreReactive semaphore = reactive.getPermitExpirableSemaphore(name);
                        return semaphore.trySetPermits(what.capacity()).thenReturn(semaphore).cache();
                    })
                    .flatMap(semaphore -> semaphore.acquire(Contender.TTL_MILLIS, TimeUnit.MILLISECONDS)
                            .flatMap(permit -> body.then(Mono.defer(() -> semaphore.release(permit)))));
        }
    }

    /** {@code readLock()} or {@code writeLock()}, {@code lock(threadId)} in watchdog mode, the body, {@code unlock(threadId)}. */
    static final class RedissonReadWrite extends RedissonInstance {
        private final Map<String, RLockReactive[]> locks = new ConcurrentHashMap<>();

        RedissonReadWrite(RedisURI uri) {
            super(uri);
        }

        @Override
        public Mono<Void> run(Workload.Acquisition what, Mono<Void> body) {
            RLockReactive[] readWrite = locks.computeIfAbsent(what.name(), name -> {
                RReadWriteLockReactive lock = reactive.getReadWriteLock(name);
                return new RLockReactive[] {lock.readLock(), lock.writeLock()};
            });
            RLockReactive lock = readWrite[what.kind() == Workload.Kind.WRITE ? 1 : 0];
            long threadId = ThreadLocalRandom.current().nextLong();
            return lock.lock(threadId).then(body).then(Mono.defer(() -> lock.unlock(threadId)));
        }
    }

    /**
     * {@code getMultiLock(locks in the order drawn)}, {@code lock(threadId)} in watchdog mode, the
     * body, {@code unlock(threadId)}: Redisson's reactive multi-lock, made per acquisition as the
     * names vary. It takes the locks one after another in that order, waiting on each while
     * holding the earlier ones, and starts over after a wait of 1.5 s per lock.
     */
    static final class RedissonMulti extends RedissonInstance {
        private final Map<String, RLockReactive> locks = new ConcurrentHashMap<>();

        RedissonMulti(RedisURI uri) {
            super(uri);
        }

        @Override
        public Mono<Void> run(Workload.Acquisition what, Mono<Void> body) {
            RLockReactive[] parts = what.names().stream().map(n -> locks.computeIfAbsent(n, reactive::getLock))
                    .toArray(RLockReactive[]::new);
            RLockReactive all = reactive.getMultiLock(parts);
            long threadId = ThreadLocalRandom.current().nextLong();
            return all.lock(threadId).then(body).then(Mono.defer(() -> all.unlock(threadId)));
        }
    }
}
