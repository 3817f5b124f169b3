package io.reactivelock.inspect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.SetArgs;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.reactivelock.LockLease;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.ReactiveSemaphore;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.redis.RedisInternals;
import io.reactivelock.support.RecordingListener;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;

/**
 * What a {@link LockInspector} shows of the locks, semaphores and read-write locks of
 * {@link ReactiveRedisLock} clients, on a real Redis: standalone ({@link LockInspectorTest}),
 * through Sentinel ({@link SentinelLockInspectorTest}) and Cluster ({@link ClusterLockInspectorTest}).
 */
abstract class LockInspectorContract {

    static final Duration TTL = Duration.ofSeconds(30);
    static final Duration WAIT = Duration.ofSeconds(30);
    static final Duration POLL = Duration.ofMillis(20);

    private final List<Disposable> subscriptions = new ArrayList<>();
    private final List<AutoCloseable> resources = new ArrayList<>();

    /** A client (the lock, and the source of the other primitives), closed after the test. */
    abstract ReactiveRedisLock lock(LockOptions options);

    /** The client whose inspector a test reads through; by default one more {@link #lock}. */
    ReactiveRedisLock inspectingClient(LockOptions options) {
        return lock(options);
    }

    /** A client of its own, and what cuts its connections as a crash of its process would: no renewal, no release. */
    Crashable crashableLock(LockOptions options) {
        ReactiveRedisLock lock = lock(options);
        return new Crashable(lock, () -> RedisInternals.crash(lock));
    }

    /** Commands for the test's own writes and checks. */
    abstract RedisClusterAsyncCommands<String, String> redis();

    /** A semaphore of {@code capacity} permits per name, on a client of its own closed after the test. */
    ReactiveSemaphore semaphore(int capacity, LockOptions options) {
        return lock(options).semaphore(capacity);
    }

    /** A read-write lock on a client of its own closed after the test. */
    ReactiveReadWriteLock readWriteLock(LockOptions options) {
        return lock(options).readWriteLock();
    }

    record Crashable(ReactiveRedisLock lock, Runnable crash) {}

    @AfterEach
    void closeEverything() throws Exception {
        subscriptions.forEach(Disposable::dispose);
        for (AutoCloseable resource : resources) {
            resource.close();
        }
    }

    <T extends AutoCloseable> T closedAfterTheTest(T resource) {
        resources.add(0, resource);
        return resource;
    }

    LockInspector inspector(LockOptions options) {
        return inspectingClient(options).inspector();
    }

    LockInspector inspector() {
        return inspector(LockOptions.defaults());
    }

    /** Holds {@code name} until {@code release} completes; returns the lease once held. */
    LockLease hold(ReactiveLock lock, String name, Sinks.Empty<Void> release) {
        return hold("lock " + name, body -> lock.withLock(name, TTL, body), release);
    }

    /**
     * Calls {@code withLock}, a {@code withLock}-like method (withPermits, withReadLock...) given the
     * body, and returns the lease once held; the body runs until {@code release} completes.
     */
    LockLease hold(String what, Function<Function<LockLease, Mono<Void>>, Mono<Void>> withLock, Sinks.Empty<Void> release) {
        AtomicReference<LockLease> lease = new AtomicReference<>();
        subscriptions.add(withLock.apply(granted -> {
            lease.set(granted);
            return release.asMono();
        }).subscribe(value -> {}, error -> {}));
        await(what + " held").atMost(WAIT).pollInterval(POLL).until(() -> lease.get() != null);
        return lease.get();
    }

    static String shown(LockLease lease) {
        return lease.token().substring(0, 8);
    }

    static List<String> listed(LockInspector inspector) {
        return inspector.names().collectList().block(WAIT);
    }

    static Set<String> allNames(LockInspector inspector) {
        return new HashSet<>(inspector.names().collectList().block(WAIT));
    }

    @Test
    void aHeldLockShowsItsAbbreviatedHolderLeaseAndFencingTokenAndOnceReleasedIsFreeAndUnlisted() {
        ReactiveRedisLock lock = lock(LockOptions.defaults());
        LockInspector inspector = inspector();
        Sinks.Empty<Void> release = Sinks.empty();
        LockLease lease = hold(lock, "order:42", release);

        LockState held = inspector.inspect("order:42").block(WAIT);
        assertThat(held.held()).isTrue();
        assertThat(held.holder()).as("the first 8 characters of the holder's token, never the whole token")
                .isEqualTo(lease.token().substring(0, 8));
        assertThat(held.ttl()).isPositive().isLessThanOrEqualTo(TTL);
        assertThat(held.fencingToken()).isEqualTo(lease.fencingToken());
        assertThat(held.waiting()).isZero();
        assertThat(held.waiters()).isEmpty();
        assertThat(allNames(inspector)).containsExactly("order:42");

        release.tryEmitEmpty();
        await().atMost(WAIT).pollInterval(POLL).until(() -> !inspector.inspect("order:42").block(WAIT).held());
        LockState free = inspector.inspect("order:42").block(WAIT);
        assertThat(free.holder()).isNull();
        assertThat(free.ttl()).isNull();
        assertThat(free.fencingToken()).as("the record of the last token outlives the lease").isEqualTo(lease.fencingToken());
        assertThat(allNames(inspector)).isEmpty();
    }

    @Test
    void aFairLineOfThreeWaitersIsShownInArrivalOrderWithTheirLeasesAndTheyGetTheLockInThatOrder() {
        LockOptions fair = LockOptions.builder().acquireTimeout(WAIT).build();
        ReactiveLock lock = lock(fair).fair();
        LockInspector inspector = inspector();
        Sinks.Empty<Void> release = Sinks.empty();
        LockLease holder = hold(lock, "line", release);
        List<String> grantedInOrder = new CopyOnWriteArrayList<>();
        for (int i = 1; i <= 3; i++) {
            subscriptions.add(lock.withLock("line", TTL, lease -> Mono.fromRunnable(() -> grantedInOrder.add(lease.token())))
                    .subscribe());
            int queued = i;
            await("waiter " + i + " in the line").atMost(WAIT).pollInterval(POLL)
                    .until(() -> inspector.inspect("line").block(WAIT).waiting() == queued);
        }

        LockState state = inspector.inspect("line").block(WAIT);
        assertThat(state.holder()).isEqualTo(holder.token().substring(0, 8));
        assertThat(state.waiting()).isEqualTo(3);
        assertThat(state.waiters()).hasSize(3).allSatisfy(waiter -> {
            assertThat(waiter.token()).hasSize(8);
            assertThat(waiter.leaseLeft()).as("a live waiter's place is kept for at most one waiter lease")
                    .isPositive().isLessThanOrEqualTo(fair.waiterLease());
        });

        release.tryEmitEmpty();
        await("every waiter served").atMost(WAIT).pollInterval(POLL).until(() -> grantedInOrder.size() == 3);
        assertThat(state.waiters()).extracting(LockState.Waiter::token)
                .as("the line as shown is the order in which the waiters got the lock")
                .containsExactlyElementsOf(grantedInOrder.stream().map(token -> token.substring(0, 8)).toList());
        await().atMost(WAIT).pollInterval(POLL).until(() -> !inspector.inspect("line").block(WAIT).held());
        assertThat(inspector.inspect("line").block(WAIT).waiting()).isZero();
    }

    @Test
    void nonFairWaitersOfEveryProcessAreCountedAsWaitingUntilTheyAreServed() {
        ReactiveRedisLock here = lock(LockOptions.builder().acquireTimeout(WAIT).build());
        ReactiveRedisLock elsewhere = lock(LockOptions.builder().acquireTimeout(WAIT).build());
        LockInspector inspector = inspector();
        Sinks.Empty<Void> release = Sinks.empty();
        hold(here, "busy", release);
        List<String> served = new CopyOnWriteArrayList<>();
        for (ReactiveRedisLock lock : List.of(here, elsewhere)) {
            subscriptions.add(lock.withLock("busy", TTL, Mono.fromRunnable(() -> served.add("served"))).subscribe());
        }
        await("both waiters registered to be woken").atMost(WAIT).pollInterval(POLL)
                .until(() -> inspector.inspect("busy").block(WAIT).waiting() == 2);
        assertThat(inspector.inspect("busy").block(WAIT).waiters()).as("only a fair line is listed one by one").isEmpty();

        release.tryEmitEmpty();
        await("every waiter served").atMost(WAIT).pollInterval(POLL).until(() -> served.size() == 2);
        assertThat(inspector.inspect("busy").block(WAIT).waiting()).isZero();
    }

    @Test
    void aLockWhoseHolderCrashedIsListedUntilItExpiresThenDisappears() {
        Crashable crashable = crashableLock(LockOptions.defaults());
        LockInspector inspector = inspector();
        Duration ttl = Duration.ofMillis(800);
        AtomicReference<LockLease> lease = new AtomicReference<>();
        subscriptions.add(crashable.lock().withLock("crashed", ttl, granted -> {
            lease.set(granted);
            return Mono.never();
        }).subscribe(value -> {}, error -> {}));
        await().atMost(WAIT).pollInterval(POLL).until(() -> lease.get() != null);
        assertThat(allNames(inspector)).containsExactly("crashed");
        assertThat(inspector.inspect("crashed").block(WAIT).ttl()).isPositive().isLessThanOrEqualTo(ttl);

        crashable.crash().run();

        await("the lease to run out").atMost(WAIT).pollInterval(POLL).until(() -> allNames(inspector).isEmpty());
        LockState state = inspector.inspect("crashed").block(WAIT);
        assertThat(state.held()).isFalse();
        assertThat(state.fencingToken()).isEqualTo(lease.get().fencingToken());
    }

    @Test
    void hostileNamesAreListedOnceAndInspectedAsTheyWereGivenAndForeignKeysUnderThePrefixAreNot() {
        List<String> hostile = List.of("{", "}", "{}", "a{b}c", "%", "%7B", "%%7D%25", "x}{y",
                "ключ {🔒} ü", "*?[a-z]\\", " ", "lock:{nested}",
                "{%}".repeat(170) + "🔒"); // 512 UTF-16 characters
        assertThat(hostile.get(hostile.size() - 1)).hasSize(512);
        ReactiveRedisLock lock = lock(LockOptions.defaults());
        LockInspector inspector = inspector();
        Sinks.Empty<Void> release = Sinks.empty();
        List<LockLease> leases = hostile.stream().map(name -> hold(lock, name, release)).toList();
        // Names whose keys look like another name's keys of a semaphore or a read-write lock; a name
        // held both as a lock and as a semaphore, listed once.
        String permitsLike = "}:permits";
        String readersLike = "a}:rw:readers";
        hold("semaphore " + permitsLike, body -> semaphore(2, LockOptions.defaults())
                .withPermits(permitsLike, 1, TTL, body), release);
        hold("read lock " + readersLike, body -> readWriteLock(LockOptions.defaults())
                .withReadLock(readersLike, TTL, body), release);
        hold("semaphore a{b}c", body -> semaphore(2, LockOptions.defaults()).withPermits("a{b}c", 1, TTL, body), release);
        // Keys under the prefix that no held name gives: a stray escape, a name's other keys, unknown
        // suffixes, a read-write lock with only a writer waiting.
        join(redis().set("lock:{%41}", "x"), redis().set("lock:{a}b}", "x"), redis().set("lock:{}", "x"),
                redis().set(RedisInternals.fenceKey(RedisInternals.lockKey("fenced")), "1"), redis().set("other:{a}", "x"),
                redis().zadd("lock:{%41}:permits", 1, "1:t"), redis().zadd("lock:{}:rw:readers", 1, "t"),
                redis().zadd("lock:{s}:sleepers", 1, "t"), redis().zadd("lock:{w}:waiters", 1, "t"),
                redis().zadd("lock:{q}:rw:writers-waiting", 1, "t"), redis().set("lock:{p}:permits:x", "x"),
                redis().set("lock:{r}:rw:writer:fence", "1"), redis().set("lock:{r}:rw:writerr", "x"));

        List<String> held = new ArrayList<>(hostile);
        held.addAll(List.of(permitsLike, readersLike));
        assertThat(listed(inspector)).containsExactlyInAnyOrderElementsOf(held);
        for (LockLease lease : leases) {
            LockState state = inspector.inspect(lease.name()).block(WAIT);
            assertThat(state.name()).isEqualTo(lease.name());
            assertThat(state.holder()).as(lease.name()).isEqualTo(shown(lease));
            assertThat(state.fencingToken()).as(lease.name()).isEqualTo(lease.fencingToken());
        }
        assertThat(inspector.inspect("a{b}c").block(WAIT).semaphore().permits()).isEqualTo(1);
        assertThat(inspector.inspect(permitsLike).block(WAIT).semaphore().permits()).isEqualTo(1);
        assertThat(inspector.inspect(readersLike).block(WAIT).readWrite().readers()).isEqualTo(1);
        assertThatThrownBy(() -> inspector.inspect("x".repeat(513))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> inspector.inspect("\uD800")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void tenThousandLocksArePagedThroughWithBoundedCountsOnNonBlockingThreads() {
        List<String> names = IntStream.range(0, 10_000).mapToObj(i -> "bulk:" + i).toList();
        // Lock and fencing keys as the lock writes them (the fencing keys must not be listed).
        join(names.stream().flatMap(name -> {
            String key = RedisInternals.lockKey(name);
            return Stream.of(redis().set(key, "token-" + name, SetArgs.Builder.px(TTL.toMillis())),
                    redis().set(RedisInternals.fenceKey(key), "1", SetArgs.Builder.px(TTL.toMillis())));
        }).toArray(RedisFuture<?>[]::new));
        LockInspector inspector = inspector();

        // Page by page as a caller would, passing each cursor back, from a parallel (non-blocking) thread.
        List<LockPage> pages = Mono.defer(() -> inspector.page(null, 500))
                .expand(page -> page.last() ? Mono.empty() : inspector.page(page.cursor(), 500))
                .subscribeOn(Schedulers.parallel())
                .collectList()
                .block(WAIT);

        List<String> listed = pages.stream().flatMap(page -> page.names().stream()).toList();
        assertThat(pages.size()).as("pages").isGreaterThan(10);
        assertThat(pages.get(pages.size() - 1).last()).isTrue();
        assertThat(new HashSet<>(listed)).as("every lock, and nothing else (no fencing key)").isEqualTo(new HashSet<>(names));
        assertThat(inspector.names().subscribeOn(Schedulers.parallel()).collect(Collectors.toSet()).block(WAIT))
                .hasSize(names.size());
    }

    @Test
    void aSemaphoreShowsThePermitsOfItsHoldersAndIsListedWhileTheyHoldThemAndOnceReleasedIsNeither() {
        ReactiveSemaphore semaphore = semaphore(4, LockOptions.defaults());
        LockInspector inspector = inspector();
        Sinks.Empty<Void> releaseTwo = Sinks.empty();
        Sinks.Empty<Void> releaseOne = Sinks.empty();
        LockLease two = hold("2 permits", body -> semaphore.withPermits("exports", 2, TTL, body), releaseTwo);
        LockLease one = hold("1 permit", body -> semaphore.withPermits("exports", 1, TTL, body), releaseOne);

        LockState state = inspector.inspect("exports").block(WAIT);
        assertThat(state.semaphore()).isNotNull();
        assertThat(state.semaphore().permits()).as("permits held").isEqualTo(3);
        assertThat(state.semaphore().holders())
                .extracting(LockState.PermitHolder::token, LockState.PermitHolder::permits)
                .as("each holder, abbreviated, with its permits")
                .containsExactlyInAnyOrder(tuple(shown(two), 2), tuple(shown(one), 1));
        assertThat(state.semaphore().holders()).allSatisfy(holder ->
                assertThat(holder.leaseLeft()).isPositive().isLessThanOrEqualTo(TTL));
        assertThat(state.held()).as("the lock of the same name is another lock").isFalse();
        assertThat(state.readWrite()).isNull();
        assertThat(state.inUse()).isTrue();
        assertThat(listed(inspector)).containsExactly("exports");

        releaseTwo.tryEmitEmpty();
        releaseOne.tryEmitEmpty();
        String permits = RedisInternals.lockKey("exports") + ":permits";
        await("both holders' permits given back").atMost(WAIT).pollInterval(POLL)
                .until(() -> redis().exists(permits).get() == 0);
        LockState released = inspector.inspect("exports").block(WAIT);
        assertThat(released.semaphore()).as("no permit held").isNull();
        assertThat(released.inUse()).isFalse();
        assertThat(listed(inspector)).isEmpty();
    }

    @Test
    void aReadWriteLockShowsItsReadersThenAWaitingWriterThenTheWriterWithItsLeaseAndFencingToken() {
        ReactiveReadWriteLock rw = readWriteLock(LockOptions.builder().acquireTimeout(WAIT).build());
        LockInspector inspector = inspector();
        Sinks.Empty<Void> releaseReaders = Sinks.empty();
        hold("reader 1", body -> rw.withReadLock("catalog", TTL, body), releaseReaders);
        hold("reader 2", body -> rw.withReadLock("catalog", TTL, body), releaseReaders);

        LockState read = inspector.inspect("catalog").block(WAIT);
        assertThat(read.readWrite()).as("two readers").isEqualTo(new LockState.ReadWrite(null, null, null, 2, 0));
        assertThat(read.held()).as("the lock of the same name is another lock").isFalse();
        assertThat(read.semaphore()).isNull();
        assertThat(listed(inspector)).containsExactly("catalog");

        AtomicReference<LockLease> writer = new AtomicReference<>();
        Sinks.Empty<Void> releaseWriter = Sinks.empty();
        subscriptions.add(rw.withWriteLock("catalog", TTL, lease -> {
            writer.set(lease);
            return releaseWriter.asMono();
        }).subscribe(value -> {}, error -> {}));
        String rwKey = RedisInternals.lockKey("catalog") + ":rw";
        await("the writer registered as waiting").atMost(WAIT).pollInterval(POLL)
                .until(() -> redis().zcard(rwKey + ":writers-waiting").get() == 1);
        assertThat(inspector.inspect("catalog").block(WAIT).readWrite())
                .as("two readers, a writer waiting").isEqualTo(new LockState.ReadWrite(null, null, null, 2, 1));

        releaseReaders.tryEmitEmpty();
        await("the writer in").atMost(WAIT).pollInterval(POLL).until(() -> writer.get() != null);
        LockState.ReadWrite written = inspector.inspect("catalog").block(WAIT).readWrite();
        assertThat(written).isNotNull();
        assertThat(written.writer()).isEqualTo(shown(writer.get()));
        assertThat(written.writerTtl()).isPositive().isLessThanOrEqualTo(TTL);
        assertThat(written.fencingToken()).isEqualTo(writer.get().fencingToken());
        assertThat(written.readers()).isZero();
        assertThat(written.writersWaiting()).isZero();
        assertThat(listed(inspector)).containsExactly("catalog");

        releaseWriter.tryEmitEmpty();
        await("the writer gone").atMost(WAIT).pollInterval(POLL).until(() -> redis().exists(rwKey + ":writer").get() == 0);
        assertThat(inspector.inspect("catalog").block(WAIT).readWrite()).isNull();
        assertThat(listed(inspector)).isEmpty();
    }

    @Test
    void aSemaphoreHolderAndAReaderWhoseLeasesEndedAreNotCountedThoughRedisStillHasThem() throws Exception {
        String name = "pool";
        Duration shortTtl = Duration.ofMillis(800);
        ReactiveRedisLock live = lock(LockOptions.defaults());
        ReactiveRedisLock crashing = lock(LockOptions.defaults());
        LockInspector inspector = inspector();
        Sinks.Empty<Void> never = Sinks.empty();
        LockLease holder = hold("a live holder", body -> live.semaphore(3).withPermits(name, 1, TTL, body), never);
        LockLease crashedHolder = hold("a holder about to crash", body -> crashing.semaphore(3).withPermits(name, 2, shortTtl, body), never);
        hold("a live reader", body -> live.readWriteLock().withReadLock(name, TTL, body), never);
        LockLease crashedReader = hold("a reader about to crash", body -> crashing.readWriteLock().withReadLock(name, shortTtl, body), never);

        // Their client's connections go, as with a crash of their process: no renewal, no release.
        RedisInternals.crash(crashing);
        String permits = RedisInternals.lockKey(name) + ":permits";
        String readers = RedisInternals.lockKey(name) + ":rw:readers";
        await("both crashed leases to end by the server's clock").atMost(WAIT).pollInterval(POLL).until(() ->
                serverMillis() > redis().zscore(permits, "2:" + crashedHolder.token()).get()
                        && serverMillis() > redis().zscore(readers, crashedReader.token()).get());

        LockState state = inspector.inspect(name).block(WAIT);
        assertThat(redis().zcard(permits).get()).as("the crashed holder is still in Redis (scripts drop it lazily)").isEqualTo(2);
        assertThat(redis().zcard(readers).get()).as("the crashed reader is still in Redis").isEqualTo(2);
        assertThat(state.semaphore()).isNotNull();
        assertThat(state.semaphore().permits()).as("permits of live holders only").isEqualTo(1);
        assertThat(state.semaphore().holders()).extracting(LockState.PermitHolder::token).containsExactly(shown(holder));
        assertThat(state.readWrite()).as("live readers only").isEqualTo(new LockState.ReadWrite(null, null, null, 1, 0));
    }

    /** The server's time in ms (every server of a test runs on this machine, with its clock). */
    private long serverMillis() throws Exception {
        List<String> time = redis().time().get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        return Long.parseLong(time.get(0)) * 1000 + Long.parseLong(time.get(1)) / 1000;
    }

    @Test
    void forceReleaseDeletesTheLockOnlyForTheHolderSeenAndTellsTheListenerAndTheHolder() {
        ReactiveRedisLock lock = lock(LockOptions.builder().acquireTimeout(WAIT).build());
        RecordingListener audit = new RecordingListener();
        LockInspector admin = inspector(LockOptions.builder().listener(audit).build()).withForceReleaseEnabled();
        assertThat(admin.forceReleaseEnabled()).isTrue();
        Sinks.Empty<Void> releaseFirst = Sinks.empty();
        LockLease first = hold(lock, "stuck", releaseFirst);
        String firstSeen = admin.inspect("stuck").block(WAIT).holder();
        assertThat(firstSeen).isEqualTo(first.token().substring(0, 8));

        // The holder the operator saw left; a newer one holds the lock.
        releaseFirst.tryEmitEmpty();
        AtomicReference<LockLease> second = new AtomicReference<>();
        AtomicReference<Throwable> secondEnded = new AtomicReference<>();
        subscriptions.add(lock.withLock("stuck", Duration.ofSeconds(3), lease -> {
            second.set(lease);
            return Mono.never();
        }).subscribe(value -> {}, secondEnded::set));
        await().atMost(WAIT).pollInterval(POLL).until(() -> second.get() != null);

        assertThat(admin.forceRelease("stuck", firstSeen).block(WAIT)).as("stale holder").isFalse();
        assertThat(admin.inspect("stuck").block(WAIT).holder()).isEqualTo(second.get().token().substring(0, 8));
        assertThat(audit.list).isEmpty();

        String secondSeen = admin.inspect("stuck").block(WAIT).holder();
        assertThat(admin.forceRelease("stuck", secondSeen).block(WAIT)).isTrue();
        assertThat(admin.inspect("stuck").block(WAIT).held()).isFalse();
        assertThat(audit.list).containsExactly("lost stuck");
        assertThat(audit.lost.get(0)).isInstanceOf(LockLostException.class).hasMessageContaining(secondSeen);
        await("the holder to find out at its next renewal").atMost(WAIT).pollInterval(POLL)
                .until(() -> secondEnded.get() != null);
        assertThat(secondEnded.get()).isInstanceOf(LockLostException.class);
    }

    @Test
    void forceReleaseIsRefusedUnlessEnabledAndSendsNothing() {
        ReactiveRedisLock lock = lock(LockOptions.defaults());
        LockLease lease = hold(lock, "kept", Sinks.empty());
        LockInspector inspector = inspector();
        assertThat(inspector.forceReleaseEnabled()).isFalse();

        assertThatThrownBy(() -> inspector.forceRelease("kept", lease.token().substring(0, 8)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("withForceReleaseEnabled");
        assertThat(inspector.inspect("kept").block(WAIT).holder()).isEqualTo(lease.token().substring(0, 8));
    }

    /** Waits for the test's own writes. */
    static void join(RedisFuture<?>... futures) {
        CompletableFuture.allOf(Arrays.stream(futures).map(RedisFuture::toCompletableFuture).toArray(CompletableFuture<?>[]::new))
                .orTimeout(WAIT.toMillis(), TimeUnit.MILLISECONDS)
                .join();
    }
}
