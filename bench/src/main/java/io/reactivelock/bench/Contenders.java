package io.reactivelock.bench;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.codec.StringCodec;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.redis.ReactiveRedisLock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.redisson.Redisson;
import org.redisson.api.RLockReactive;
import org.redisson.api.RedissonClient;
import org.redisson.api.RedissonReactiveClient;
import org.redisson.config.Config;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.integration.redis.util.RedisLockRegistry;
import org.springframework.integration.redis.util.RedisLockRegistry.RedisLockType;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.util.retry.Retry;

/** The contenders: this library, Redisson, Spring Integration (two lock types), and the raw floor. */
final class Contenders {

    static final String OURS = "reactive-lock";
    static final String OURS_FAIR = "reactive-lock fair";
    static final String REDISSON = "Redisson RLockReactive";
    static final String REDISSON_FAIR = "Redisson fair RLockReactive";
    static final String SPRING_SPIN = "Spring RedisLockRegistry SPIN_LOCK";
    static final String SPRING_PUBSUB = "Spring RedisLockRegistry PUB_SUB_LOCK";
    static final String RAW = "raw floor (SET NX PX + EVALSHA del)";
    static final String OURS_NOACK = "reactive-lock, replicaAcknowledgement(0)";
    static final String REDISSON_NOSYNC = "Redisson RLockReactive, checkLockSyncedSlaves false";

    /** Short ids for -Dbench.contenders, in the order of the tables. */
    static final Map<String, String> IDS = Map.of("ours", OURS, "ours-fair", OURS_FAIR,
            "redisson", REDISSON, "redisson-fair", REDISSON_FAIR, "spring-spin", SPRING_SPIN, "spring-pubsub", SPRING_PUBSUB, "raw", RAW,
            "ours-noack", OURS_NOACK, "redisson-nosync", REDISSON_NOSYNC);

    /** What {@code -Dbench.contenders=all} runs, in this order. */
    static final List<String> ORDER = List.of("ours", "ours-fair", "redisson", "redisson-fair", "spring-spin",
            "spring-pubsub", "raw");

    private Contenders() {}

    static Contender create(String id, RedisURI uri) {
        return switch (id) {
            case "ours" -> new Contender(OURS, false, () -> new Ours(ReactiveRedisLock.create(uri, LockOptions.defaults()), false));
            case "ours-fair" -> new Contender(OURS_FAIR, false,
                    () -> new Ours(ReactiveRedisLock.create(uri, LockOptions.defaults()), true));
            case "redisson" -> new Contender(REDISSON, false, () -> new RedissonLock(uri, false));
            case "ours-noack" -> new Contender(OURS_NOACK, false, () -> new Ours(ReactiveRedisLock.create(uri,
                    LockOptions.builder().replicaAcknowledgement(0).build()), false));
            case "redisson-nosync" -> new Contender(REDISSON_NOSYNC, false,
                    () -> new RedissonLock(config(uri).setCheckLockSyncedSlaves(false), false));
            case "redisson-fair" -> new Contender(REDISSON_FAIR, false, () -> new RedissonLock(uri, true));
            case "spring-spin" -> new Contender(SPRING_SPIN, true, () -> new SpringLock(uri, RedisLockType.SPIN_LOCK));
            case "spring-pubsub" -> new Contender(SPRING_PUBSUB, true, () -> new SpringLock(uri, RedisLockType.PUB_SUB_LOCK));
            case "raw" -> new Contender(RAW, false, () -> new RawFloor(uri));
            default -> throw new IllegalArgumentException("unknown contender '" + id + "', known: " + ORDER);
        };
    }

    /**
     * A Redisson client with the default single-server configuration, as a user gets it (master-slave,
     * naming the replica, under {@code -Dbench.replica=true}).
     */
    static RedissonClient redisson(RedisURI uri) {
        return Redisson.create(config(uri));
    }

    /** The configuration of {@link #redisson(RedisURI)}. */
    static Config config(RedisURI uri) {
        Config config = new Config();
        String master = "redis://" + uri.getHost() + ":" + uri.getPort();
        String replica = System.getProperty(Bench.REPLICA + ".address");
        if (replica == null) {
            config.useSingleServer().setAddress(master);
        } else {
            config.useMasterSlaveServers().setMasterAddress(master).addSlaveAddress(replica);
        }
        return config;
    }

    /** This library with the default options, its client's lock or fair lock; each instance its own client. */
    static final class Ours implements Contender.Instance {
        private final ReactiveRedisLock client;
        private final ReactiveLock lock;
        private final Duration ttl = Duration.ofMillis(Contender.TTL_MILLIS);

        Ours(ReactiveRedisLock client, boolean fair) {
            this.client = client;
            this.lock = fair ? client.fair() : client;
        }

        @Override
        public Mono<Void> run(String key, Mono<Void> body) {
            return lock.withLock(key, ttl, body);
        }

        @Override
        public void close() {
            client.close();
        }
    }

    /**
     * Redisson's reactive lock in watchdog mode (no lease time: a 30 s lease renewed every 10 s
     * while held), a random thread id per acquisition so that every acquisition is its own owner.
     * An instance is one {@code RedissonClient} with the default single-server configuration, as a
     * user gets it. Fair: {@code getFairLock}, Redisson's FIFO lock, to set beside this library's
     * fair mode.
     */
    static final class RedissonLock implements Contender.Instance {
        private final RedissonClient client;
        private final RedissonReactiveClient reactive;
        private final Map<String, RLockReactive> locks = new ConcurrentHashMap<>();
        private final boolean fair;

        RedissonLock(RedisURI uri, boolean fair) {
            this(redisson(uri), fair);
        }

        /** On a client of {@code config}, whose own client this is. */
        RedissonLock(Config config, boolean fair) {
            this(Redisson.create(config), fair);
        }

        private RedissonLock(RedissonClient client, boolean fair) {
            this.client = client;
            reactive = client.reactive();
            this.fair = fair;
        }

        @Override
        public Mono<Void> run(String key, Mono<Void> body) {
            RLockReactive lock = locks.computeIfAbsent(key, fair ? reactive::getFairLock : reactive::getLock);
            long threadId = ThreadLocalRandom.current().nextLong();
            return lock.lock(threadId).then(body).then(Mono.defer(() -> lock.unlock(threadId)));
        }

        @Override
        public void close() {
            client.shutdown(0, 5, TimeUnit.SECONDS);
        }
    }

    /**
     * Spring Integration's blocking {@link RedisLockRegistry} on a Spring Data Lettuce connection
     * factory of its own (defaults: one shared native connection), with its own executor. A
     * registry is one lock owner (one client id) with an in-JVM {@code ReentrantLock} per name:
     * workers sharing a registry queue in the JVM, workers with registries of their own meet in
     * Redis.
     */
    static final class SpringLock implements Contender.Instance {
        private final LettuceConnectionFactory factory;
        private final RedisLockRegistry registry;
        private final ExecutorService executor = Executors.newCachedThreadPool(Threads.named("spring-lock-", true));

        SpringLock(RedisURI uri, RedisLockType type) {
            factory = new LettuceConnectionFactory(new RedisStandaloneConfiguration(uri.getHost(), uri.getPort()));
            factory.afterPropertiesSet();
            factory.start();
            registry = new RedisLockRegistry(factory, "spring", Duration.ofMillis(Contender.TTL_MILLIS));
            registry.setRedisLockType(type);
            registry.setExecutor(executor);
        }

        @Override
        public void runBlocking(String key, Runnable body) {
            Lock lock = registry.obtain(key);
            lock.lock();
            try {
                body.run();
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void close() {
            registry.destroy();
            executor.shutdownNow();
            factory.destroy();
        }
    }

    /**
     * The floor every correct lock pays: {@code SET key token NX PX ttl} to acquire and one
     * {@code EVALSHA} compare-and-delete to release, on Lettuce's async API; no renewal, no
     * fencing, no timeouts. A busy lock is polled with the same backoff as this library's
     * defaults. Its token is 128 bits from ThreadLocalRandom (not unguessable: SecureRandom is
     * part of what the library pays on top).
     */
    static final class RawFloor implements Contender.Instance {
        private static final String RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
        private static final RuntimeException BUSY = new RuntimeException("busy", null, false, false) {
            private static final long serialVersionUID = 1L;
        };
        private static final LockOptions DEFAULTS = LockOptions.defaults();
        private final RedisClient client;
        private final StatefulRedisConnection<String, String> connection;
        private final RedisAsyncCommands<String, String> redis;
        private final String releaseSha;
        private final SetArgs setArgs = SetArgs.Builder.nx().px(Contender.TTL_MILLIS);
        private final Retry backoff = Retry.backoff(Long.MAX_VALUE, DEFAULTS.minBackoff())
                .maxBackoff(DEFAULTS.maxBackoff())
                .jitter(DEFAULTS.jitter())
                .scheduler(Schedulers.parallel())
                .filter(e -> e == BUSY);

        RawFloor(RedisURI uri) {
            client = RedisClient.create(uri);
            client.setOptions(ClientOptions.builder()
                    .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS).build());
            connection = client.connect(StringCodec.UTF8);
            redis = connection.async();
            releaseSha = connection.sync().scriptLoad(RELEASE);
        }

        @Override
        public Mono<Void> run(String key, Mono<Void> body) {
            String token = token();
            String[] keys = {key};
            return Mono.fromCompletionStage(() -> redis.set(key, token, setArgs))
                    .switchIfEmpty(Mono.error(BUSY))
                    .retryWhen(backoff)
                    .then(body)
                    .then(Mono.fromCompletionStage(() -> redis.<Long>evalsha(releaseSha, ScriptOutputType.INTEGER, keys, token)))
                    .then();
        }

        private static String token() {
            ThreadLocalRandom random = ThreadLocalRandom.current();
            String a = Long.toHexString(random.nextLong() | Long.MIN_VALUE);
            String b = Long.toHexString(random.nextLong() | Long.MIN_VALUE);
            return a + b;
        }

        @Override
        public void close() {
            connection.close();
            client.shutdown(Duration.ZERO, Duration.ofSeconds(5));
        }
    }
}
