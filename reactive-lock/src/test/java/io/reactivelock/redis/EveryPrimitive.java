package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.LockLease;
import io.reactivelock.Leadership;
import io.reactivelock.inspect.LockState;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;
import reactor.core.publisher.Mono;

/**
 * Uses every primitive a {@link ReactiveRedisLock} hands out once, on one name (and a second one
 * for the multi-lock), checking what each caller sees: the lock, the fair lock, a semaphore, the
 * read-write lock (a reader and a writer), the multi-lock, leader election and the inspector.
 */
final class EveryPrimitive {

    static final Duration TTL = Duration.ofSeconds(30);
    static final Duration WAIT = Duration.ofSeconds(20);

    private EveryPrimitive() {}

    /** Uses each primitive of {@code client} once on {@code name} and {@code other}, one after the other. */
    static void useEachOnce(ReactiveRedisLock client, String name, String other) {
        useEachOnce(client, name, other, done -> {});
    }

    /** {@link #useEachButTheInspectorOnce}, then the inspector on {@code name}. */
    static void useEachOnce(ReactiveRedisLock client, String name, String other, Consumer<String> afterEach) {
        useEachButTheInspectorOnce(client, name, other, afterEach);
        inspectOnce(client, name);
        afterEach.accept("inspector");
    }

    /**
     * Uses each primitive but the inspector once, telling {@code afterEach} which primitive was just
     * used (when it is no longer held).
     */
    static void useEachButTheInspectorOnce(ReactiveRedisLock client, String name, String other, Consumer<String> afterEach) {
        assertThat(client.withLock(name, TTL, (LockLease lease) -> Mono.just(lease.name())).block(WAIT))
                .as("the lock").isEqualTo(name);
        afterEach.accept("lock");
        assertThat(client.fair().withLock(name, TTL, (LockLease lease) -> Mono.just(lease.fencingToken())).block(WAIT))
                .as("the fair lock's fencing token").isPositive();
        afterEach.accept("fair lock");
        assertThat(client.semaphore(3).withPermits(name, 2, TTL, (LockLease lease) -> Mono.just(lease.hasFencingToken()))
                .block(WAIT)).as("a semaphore holder has no fencing token").isFalse();
        afterEach.accept("semaphore");
        assertThat(client.readWriteLock().withReadLock(name, TTL, Mono.just("read")).block(WAIT)).isEqualTo("read");
        assertThat(client.readWriteLock().withWriteLock(name, TTL, (LockLease lease) -> Mono.just(lease.fencingToken()))
                .block(WAIT)).as("the writer's fencing token").isPositive();
        afterEach.accept("read-write lock");
        assertThat(client.multiLock().withLocks(List.of(other, name), TTL, lease -> Mono.just(lease.names())).block(WAIT))
                .as("the multi-lock's names, sorted").containsExactlyElementsOf(List.of(name, other).stream().sorted().toList());
        afterEach.accept("multi-lock");
        Leadership leadership = client.leaderElection().lead(name, TTL).filter(Leadership::isLeader).next().block(WAIT);
        assertThat(leadership).isNotNull();
        assertThat(leadership.name()).isEqualTo(name);
        afterEach.accept("leader election");
    }

    /** Inspects {@code name}, which the lock was taken on. */
    static void inspectOnce(ReactiveRedisLock client, String name) {
        LockState state = client.inspector().inspect(name).block(WAIT);
        assertThat(state).isNotNull();
        assertThat(state.held()).isFalse();
        assertThat(state.fencingToken()).as("the inspector sees the fencing record the lock left").isPositive();
    }
}
