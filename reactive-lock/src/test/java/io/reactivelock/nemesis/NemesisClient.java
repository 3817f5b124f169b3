package io.reactivelock.nemesis;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.reactive.RedisReactiveCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import io.reactivelock.LeaseTimeExceededException;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockException;
import io.reactivelock.LockLease;
import io.reactivelock.LockListener;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisSentinelSet;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;
import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * One client JVM of the nemesis run, forked by {@link NemesisRun}. It connects to the lock's Redis
 * (through the nemesis' proxy) and to the resource's Redis, makes {@code instances} locks on one
 * Lettuce client (even ones non-fair, odd ones fair), two more (non-fair, fair) on a Lettuce client
 * of the Sentinel-watched Redis, and runs {@code workers} chains of operations until told to stop.
 * An operation picks a name (half of them one of a few hot names, the rest one of many cold ones;
 * names ending in {@code -fair} are used only by fair instances; one operation in
 * {@value #SENTINEL_SHARE_PERCENT} picks a name of the Sentinel's, {@code hot-s*} or {@code cold-s*}),
 * a TTL, an acquire timeout and a body length (some past the TTL), may be cancelled at a random
 * moment, and under the lock reads the name's counter at the {@link Resource} (both twins), waits for
 * the body length and writes it plus one, passing its fencing token every time.
 *
 * <p>Every event goes to standard output as a {@link Line} stamped with {@link System#nanoTime()}
 * (see {@link NemesisRun} for why those stamps compare across JVMs); reactive threads only queue
 * lines, and a thread of its own prints them; a {@link StallWatch} reports the JVM's stalls.
 * Standard input carries {@code stop} (start no new operation, finish those under way, report) and
 * {@code exit}; its end (the parent died) ends the JVM. BlockHound is installed, and a blocking call
 * on a reactive thread is reported as an event.
 *
 * <p>Arguments, as {@code key=value}: {@code client} (its name), {@code lock} and {@code resource}
 * (ports on 127.0.0.1), {@code sentinels} (the Sentinels' ports, comma-separated), {@code instances},
 * {@code workers}, {@code hot} and {@code cold} (numbers of names).
 */
public final class NemesisClient {

    /** The TTLs an operation chooses from. */
    static final List<Duration> TTLS = List.of(Duration.ofMillis(600), Duration.ofMillis(1200));
    /** The acquire timeouts an operation chooses from. */
    static final List<Duration> ACQUIRE_TIMEOUTS = List.of(Duration.ofMillis(500), Duration.ofSeconds(2), Duration.ofSeconds(5));
    /** The longest body: two and a half of the longest TTL. */
    static final Duration LONGEST_BODY = Duration.ofMillis(3000);
    /** How long the client waits for its operations to end after {@code stop}; those left are reported hung. */
    static final Duration DRAIN_TIMEOUT = Duration.ofSeconds(30);
    private static final double CANCEL_PROBABILITY = 0.1;
    private static final double HOT_PROBABILITY = 0.5;
    /** The share of operations on the Sentinel-watched Redis, whose only fault is a failover. */
    static final int SENTINEL_SHARE_PERCENT = 20;
    private static final int SENTINEL_HOT = 2;
    private static final int SENTINEL_COLD = 40;
    /** The longest pause of a worker between two operations, which bounds the load on a 2-core machine. */
    private static final long THINK_MILLIS = 100;
    private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(1);

    private final String client;
    /** The locks on the proxied Redis, then two (non-fair, fair) on the Sentinel-watched one. */
    private final List<ReactiveRedisLock> locks = new ArrayList<>();
    /** What each instance locks with: its client (even instances), or its client's fair lock (odd ones). */
    private final List<ReactiveLock> views = new ArrayList<>();
    private final List<String> hotNames = new ArrayList<>();
    private final List<String> coldNames = new ArrayList<>();
    private final List<String> sentinelHotNames = new ArrayList<>();
    private final List<String> sentinelColdNames = new ArrayList<>();
    private final RedisReactiveCommands<String, String> resource;
    private final String script;
    private final Map<String, Op> underWay = new ConcurrentHashMap<>();
    private final AtomicLong sequence = new AtomicLong();
    private final AtomicBoolean stopping = new AtomicBoolean();

    private static final ConcurrentLinkedQueue<String> OUT = new ConcurrentLinkedQueue<>();

    private NemesisClient(String client, RedisReactiveCommands<String, String> resource, String script, int hot, int cold) {
        this.client = client;
        this.resource = resource;
        this.script = script;
        for (int i = 0; i < hot; i++) {
            hotNames.add(i % 3 == 2 ? "hot-" + i + "-fair" : "hot-" + i);
        }
        for (int i = 0; i < cold; i++) {
            coldNames.add(i % 4 == 3 ? "cold-" + i + "-fair" : "cold-" + i);
        }
        for (int i = 0; i < SENTINEL_HOT; i++) {
            sentinelHotNames.add(i % 2 == 1 ? "hot-s" + i + "-fair" : "hot-s" + i);
        }
        for (int i = 0; i < SENTINEL_COLD; i++) {
            sentinelColdNames.add(i % 4 == 3 ? "cold-s" + i + "-fair" : "cold-s" + i);
        }
    }

    /** Whether {@code name} is one of those locked on the Sentinel-watched Redis. */
    static boolean viaSentinel(String name) {
        return name.startsWith("hot-s") || name.startsWith("cold-s");
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> arguments = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            arguments.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        String name = arguments.get("client");
        BlockHound.builder().loadIntegrations()
                .blockingMethodCallback(method -> {
                    emit(Line.of("BLOCKING", "client", name, "t", System.nanoTime(),
                            "method", method.toString().replace(' ', '_'),
                            "thread", Thread.currentThread().getName().replace(' ', '_')));
                    // Where it came from, as plain lines (not events) that follow it in the run's events.log.
                    for (StackTraceElement frame : Thread.currentThread().getStackTrace()) {
                        emit("  at " + frame);
                    }
                    throw new BlockingOperationError(method);
                })
                .install();
        Thread printer = new Thread(NemesisClient::print, "nemesis-printer");
        printer.start();
        emit(Line.of("HELLO", "client", name, "t", System.nanoTime()));
        StallWatch.start((kind, from, to, gcMillis, stacks) -> {
            emit(Line.of("STALL", "client", name, "kind", kind, "from", from, "to", to, "gc", gcMillis));
            if (!stacks.isEmpty()) {
                System.err.println("nemesis: Reactor's timers stalled for " + (to - from) / 1_000_000 + " ms; its threads and"
                        + " Lettuce's then:\n" + stacks);
            }
        });

        CountDownLatch stop = new CountDownLatch(1);
        CountDownLatch exit = new CountDownLatch(1);
        Thread control = new Thread(() -> listen(stop, exit), "nemesis-control");
        control.setDaemon(true);
        control.start();

        ClientResources resources = ClientResources.builder()
                .reconnectDelay(Delay.exponential(Duration.ofMillis(5), Duration.ofMillis(500), 2, TimeUnit.MILLISECONDS))
                .build();
        ClientOptions options = ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .build();
        RedisClient redis = RedisClient.create(resources, RedisURI.create("127.0.0.1", Integer.parseInt(arguments.get("lock"))));
        redis.setOptions(options);
        RedisURI.Builder sentinelUri = null;
        for (String port : arguments.get("sentinels").split(",")) {
            sentinelUri = sentinelUri == null ? RedisURI.Builder.sentinel("127.0.0.1", Integer.parseInt(port),
                    RedisSentinelSet.MASTER_NAME)
                    : sentinelUri.withSentinel("127.0.0.1", Integer.parseInt(port));
        }
        RedisClient viaSentinel = RedisClient.create(resources, sentinelUri.build());
        viaSentinel.setOptions(options);
        StatefulRedisConnection<String, String> resourceConnection = redis.connect(StringCodec.UTF8,
                RedisURI.create("127.0.0.1", Integer.parseInt(arguments.get("resource"))));
        String sha = resourceConnection.sync().scriptLoad(Resource.SCRIPT);
        NemesisClient self = new NemesisClient(name, resourceConnection.reactive(), sha,
                Integer.parseInt(arguments.get("hot")), Integer.parseInt(arguments.get("cold")));
        int instances = Integer.parseInt(arguments.get("instances"));
        for (int i = 0; i < instances + 2; i++) {
            ReactiveRedisLock lock = ReactiveRedisLock.create(i < instances ? redis : viaSentinel, LockOptions.builder()
                    .commandTimeout(COMMAND_TIMEOUT)
                    .listener(self.listener(i))
                    .build());
            self.locks.add(lock);
            self.views.add(i % 2 == 1 ? lock.fair() : lock);
        }
        emit(Line.of("READY", "client", name, "t", System.nanoTime()));

        int workers = Integer.parseInt(arguments.get("workers"));
        CountDownLatch drained = new CountDownLatch(1);
        Flux.range(0, workers)
                .flatMap(worker -> Mono.defer(self::operation).repeat(() -> !self.stopping.get()), workers)
                .doFinally(signal -> drained.countDown())
                .subscribe();
        stop.await();
        self.stopping.set(true);
        drained.await(DRAIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        for (Op hung : self.underWay.values()) {
            emit(hung.line("hung", -1));
        }
        StringBuilder active = new StringBuilder();
        for (ReactiveRedisLock lock : self.locks) {
            active.append(active.length() == 0 ? "" : ",").append(lock.activeLeases());
        }
        emit(Line.of("QUIESCENT", "client", name, "t", System.nanoTime(), "activeLeases", active, "hung", self.underWay.size()));
        exit.await();
        for (ReactiveRedisLock lock : self.locks) {
            lock.close();
        }
        resourceConnection.close();
        redis.shutdown();
        viaSentinel.shutdown();
        resources.shutdown();
        emit(Line.of("BYE", "client", name, "t", System.nanoTime()));
        OUT.add("");
        printer.join();
        System.exit(0);
    }

    private LockListener listener(int instance) {
        return new LockListener() {
            @Override
            public void renewed(String name) {
                emit(Line.of("RENEW", "client", client, "instance", instance, "name", name, "t", System.nanoTime()));
            }

            @Override
            public void lost(String name, LockException error) {
                emit(Line.of("LOST", "client", client, "instance", instance, "name", name, "t", System.nanoTime(),
                        "cause", error.getClass().getSimpleName()));
            }
        };
    }

    /** One operation: never fails, and emits its record when it ends. */
    private Mono<Void> operation() {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        boolean sentinel = random.nextInt(100) < SENTINEL_SHARE_PERCENT;
        List<String> names = random.nextDouble() < HOT_PROBABILITY ? sentinel ? sentinelHotNames : hotNames
                : sentinel ? sentinelColdNames : coldNames;
        String name = names.get(random.nextInt(names.size()));
        boolean fair = name.endsWith("-fair");
        // Even instances are non-fair, odd ones fair: pick one of the name's mode (the Sentinel's: the last two).
        int proxied = locks.size() - 2;
        int instance = (sentinel ? proxied : 2 * random.nextInt(proxied / 2)) + (fair ? 1 : 0);
        Duration ttl = TTLS.get(random.nextInt(TTLS.size()));
        Duration acquireTimeout = ACQUIRE_TIMEOUTS.get(random.nextInt(ACQUIRE_TIMEOUTS.size()));
        double kind = random.nextDouble();
        long bodyMillis = kind < 0.6 ? random.nextLong(0, 20)
                : kind < 0.85 ? random.nextLong(20, ttl.toMillis() / 2)
                : random.nextLong(ttl.toMillis(), ttl.toMillis() * 5 / 2);
        long cancelMillis = random.nextDouble() < CANCEL_PROBABILITY ? random.nextLong(0, 2000) : -1;
        Op op = new Op(client + "-" + sequence.incrementAndGet(), instance, name, fair, ttl, acquireTimeout, bodyMillis,
                cancelMillis);
        underWay.put(op.id, op);

        Mono<Void> run = views.get(instance).withAcquireTimeout(acquireTimeout)
                .withLock(name, ttl, lease -> body(op, lease))
                .doOnCancel(() -> op.ended("cancelled"))
                .onErrorResume(error -> {
                    op.ended(outcome(error));
                    return Mono.empty();
                })
                .doOnSuccess(done -> op.ended("ok"));
        if (cancelMillis >= 0) {
            run = run.takeUntilOther(Mono.delay(Duration.ofMillis(cancelMillis)));
        }
        // Recorded before the end goes on (run never fails, and nothing downstream cancels it): so
        // the workers' end, which ends the drain wait, comes after every record. doFinally would
        // record after the end went on, and the drain wait could report the operation hung first.
        return run.doOnTerminate(() -> {
                    // Cancelled before it was subscribed (a cancel due at once) if nothing else ended it.
                    op.ended("cancelled");
                    underWay.remove(op.id);
                    emit(op.line(op.outcome, op.end));
                })
                .then(Mono.delay(Duration.ofMillis(random.nextLong(0, THINK_MILLIS))))
                .then();
    }

    /**
     * Reads the counter from both twins of the resource, waits for the body length, writes each
     * twin the value it gave plus one (the fenced twin only if it accepted the read); passes the
     * fencing token every time.
     */
    private Mono<Void> body(Op op, LockLease lease) {
        return Mono.defer(() -> {
            op.entered(lease);
            return access(op, "read")
                    .flatMap(read -> {
                        op.readAt = System.nanoTime();
                        op.readFenced = read.get(0);
                        op.readUnfenced = read.get(1);
                        emit(Line.of("ENTER", "op", op.id, "client", client, "name", op.name, "t", op.readAt,
                                "writeAt", op.readAt + TimeUnit.MILLISECONDS.toNanos(op.bodyMillis)));
                        return Mono.delay(Duration.ofMillis(op.bodyMillis))
                                .then(Mono.defer(() -> {
                                    op.writeSent = System.nanoTime();
                                    return access(op, "write", op.readFenced < 0 ? "-" : Long.toString(op.readFenced),
                                            Long.toString(op.readUnfenced));
                                }));
                    })
                    .then()
                    .doOnTerminate(op::exited)
                    .doOnCancel(op::exited);
        });
    }

    /**
     * One access to both twins ({@code valuesRead}: for a write, the value read from each twin, {@code -}
     * for none); the value each had before it, -1 if refused, -2 if not accessed.
     */
    private Mono<List<Long>> access(Op op, String kind, String... valuesRead) {
        String[] args = new String[4 + valuesRead.length];
        System.arraycopy(new String[] {kind, Long.toString(op.fence), op.id, op.name}, 0, args, 0, 4);
        System.arraycopy(valuesRead, 0, args, 4, valuesRead.length);
        return resource.<Object>evalsha(script, ScriptOutputType.MULTI, Resource.keys(op.name), args)
                .collectList()
                .map(NemesisClient::numbers);
    }

    /** The script's two numbers, whether Lettuce emits its array as one element or element by element. */
    private static List<Long> numbers(List<Object> reply) {
        List<Long> numbers = new ArrayList<>();
        for (Object item : reply) {
            if (item instanceof List<?> nested) {
                nested.forEach(n -> numbers.add((Long) n));
            } else {
                numbers.add((Long) item);
            }
        }
        return numbers;
    }

    private static String outcome(Throwable error) {
        if (error instanceof LockAcquisitionException acquisition) {
            return "acquire-" + acquisition.reason().tag();
        }
        if (error instanceof LockLostException) {
            return "lost";
        }
        if (error instanceof LeaseTimeExceededException) {
            return "max-lease-time";
        }
        return "error-" + error.getClass().getSimpleName();
    }

    /** Queues a line for the printer thread; safe on any thread, never blocks. */
    private static void emit(String line) {
        OUT.add(line);
    }

    /** Prints queued lines until the empty line that ends the queue. */
    private static void print() {
        PrintStream out = new PrintStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16), false,
                UTF_8);
        while (true) {
            String line = OUT.poll();
            if (line == null) {
                out.flush();
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2));
            } else if (line.isEmpty()) {
                out.flush();
                return;
            } else {
                out.println(line);
            }
        }
    }

    private static void listen(CountDownLatch stop, CountDownLatch exit) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, UTF_8))) {
            String command;
            while ((command = in.readLine()) != null) {
                switch (command.trim()) {
                    case "stop" -> stop.countDown();
                    case "exit" -> exit.countDown();
                    default -> System.err.println("unknown command: " + command);
                }
            }
        } catch (IOException e) {
            e.printStackTrace();
        }
        // The parent is gone: nobody will read what we print.
        Runtime.getRuntime().halt(2);
    }

    /** What one operation did; written by whichever thread a signal arrives on, hence volatile. */
    private final class Op {
        final String id;
        final int instance;
        final String name;
        final boolean fair;
        final Duration ttl;
        final Duration acquireTimeout;
        final long bodyMillis;
        final long cancelMillis;
        final long start = System.nanoTime();
        volatile long enter = -1;
        volatile long leaseStart = -1;
        volatile long fence = -1;
        volatile long readAt = -1;
        volatile long readFenced = -2;
        volatile long readUnfenced = -2;
        volatile long writeSent = -1;
        volatile long exit = -1;
        volatile long validUntil = -1;
        volatile long end = -1;
        volatile String outcome = "none";
        private @Nullable LockLease lease;

        Op(String id, int instance, String name, boolean fair, Duration ttl, Duration acquireTimeout, long bodyMillis,
                long cancelMillis) {
            this.id = id;
            this.instance = instance;
            this.name = name;
            this.fair = fair;
            this.ttl = ttl;
            this.acquireTimeout = acquireTimeout;
            this.bodyMillis = bodyMillis;
            this.cancelMillis = cancelMillis;
        }

        synchronized void entered(LockLease lease) {
            this.lease = lease;
            enter = System.nanoTime();
            fence = lease.fencingToken();
            // Before the first renewal the lease runs one TTL from when its grant was requested.
            leaseStart = lease.validUntilNanos() - ttl.toNanos();
        }

        synchronized void exited() {
            if (exit < 0) {
                exit = System.nanoTime();
                validUntil = Objects.requireNonNull(lease).validUntilNanos();
            }
        }

        /**
         * {@code withLock} ended {@code how}; a body it entered has exited by then, even if its own
         * signal did not reach {@link #exited} (a cancel racing with its subscription, seen once in
         * a soak).
         */
        synchronized void ended(String how) {
            if (end < 0) {
                end = System.nanoTime();
                outcome = how;
                if (lease != null) {
                    exited();
                }
            }
        }

        String line(String how, long endedAt) {
            return Line.of("OP", "id", id, "client", client, "instance", instance, "name", name, "fair", fair,
                    "ttl", ttl.toMillis(), "timeout", acquireTimeout.toMillis(), "body", bodyMillis, "cancel", cancelMillis,
                    "start", start, "enter", enter, "leaseStart", leaseStart, "fence", fence, "readAt", readAt,
                    "readFenced", readFenced, "readUnfenced", readUnfenced, "writeSent", writeSent, "exit", exit,
                    "validUntil", validUntil, "end", endedAt, "outcome", how.toLowerCase(Locale.ROOT));
        }
    }
}
