package io.reactivelock.inspect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisURI;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveLock;
import io.reactivelock.ReactiveReadWriteLock;
import io.reactivelock.ReactiveSemaphore;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

/**
 * The inspector works for a Redis user with only the read commands of the inspector ACL of docs/security.md
 * line ({@link #READ_RULES}): listing, a held lock and a fair line, a semaphore's holders and a
 * read-write lock's readers and waiting writer are read without any refusal ({@code ACL LOG} stays
 * empty), and that user cannot force-release. The admin line adds {@code eval} and {@code del} for
 * force-release.
 */
@WithRedis
class InspectorLeastPrivilegeTest {

    /** Quoted by docs/security.md. */
    static final String READ_RULES = "resetchannels -@all +hello +client|setinfo +client|maint_notifications"
            + " +scan +get +pttl +lrange +llen +zcard +hmget +zcount +zrangebyscore +time +info ~lock:*";
    static final String ADMIN_RULES = READ_RULES + " +eval +del";

    private static final Pattern UNKNOWN_SUBCOMMAND =
            Pattern.compile("Error in ACL SETUSER modifier '(\\+[a-z_]+\\|[a-z_]+)': Unknown command");

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(20);

    private RedisServer redis;
    private ReactiveRedisLock client;
    private ReactiveLock lock;
    private ReactiveSemaphore semaphore;
    private ReactiveReadWriteLock readWriteLock;
    private final List<ReactiveRedisLock> inspectingClients = new ArrayList<>();
    private final List<Disposable> subscriptions = new ArrayList<>();

    @BeforeEach
    void setUp(RedisServer redis) {
        this.redis = redis;
        // The locks are taken by another, unrestricted client: only the inspector is restricted here.
        client = ReactiveRedisLock.create(redis.uri(), LockOptions.builder().acquireTimeout(WAIT).build());
        lock = client.fair();
        semaphore = client.semaphore(2);
        readWriteLock = client.readWriteLock();
        redis.call("ACL", "LOG", "RESET");
    }

    @AfterEach
    void tearDown() {
        subscriptions.forEach(Disposable::dispose);
        inspectingClients.forEach(ReactiveRedisLock::close);
        client.close();
    }

    /** The inspector, with force-release enabled, of a client that connects as {@code user} with {@code rules}. */
    private LockInspector inspectorAs(String user, String rules) {
        createUser(user, new ArrayList<>(List.of(rules.split(" "))));
        RedisURI uri = RedisURI.builder(redis.uri()).withAuthentication(user, (user + "-password").toCharArray()).build();
        ReactiveRedisLock inspecting = ReactiveRedisLock.create(uri);
        inspectingClients.add(inspecting);
        return inspecting.inspector().withForceReleaseEnabled();
    }

    /**
     * Creates {@code user} with {@code rules}, less the subcommands this server does not know, as the
     * docs/security.md advises ({@code client|setinfo} and {@code client|maint_notifications} are newer than
     * Redis 7.0, which refuses a rule that names them).
     */
    private void createUser(String user, List<String> rules) {
        List<String> command = new ArrayList<>(List.of("ACL", "SETUSER", user, "reset", "on", ">" + user + "-password"));
        command.addAll(rules);
        try {
            redis.call(command.toArray(String[]::new));
        } catch (IllegalStateException refused) {
            Matcher unknown = UNKNOWN_SUBCOMMAND.matcher(String.valueOf(refused.getMessage()));
            if (!unknown.find() || !rules.remove(unknown.group(1))) {
                throw refused;
            }
            createUser(user, rules);
        }
    }

    /** A holder of {@code name} and one waiter in its fair line; returns the holder's shown token. */
    private String holdWithAWaiter(String name) {
        AtomicReference<String> holder = new AtomicReference<>();
        subscriptions.add(lock.withLock(name, TTL, lease -> {
            holder.set(lease.token().substring(0, 8));
            return Sinks.empty().asMono();
        }).subscribe());
        await().atMost(WAIT).until(() -> holder.get() != null);
        subscriptions.add(lock.withLock(name, TTL, lease -> Mono.empty()).subscribe(value -> {}, error -> {}));
        await().atMost(WAIT).until(() -> "1".equals(redis.call("LLEN", "lock:{" + name + "}:queue")));
        return holder.get();
    }

    /** A semaphore holder of {@code name}, and a reader of it with a writer waiting. */
    private void holdPermitsAndReadWithAWriterWaiting(String name) {
        subscriptions.add(semaphore.withPermits(name, 1, TTL, Mono.never()).subscribe());
        subscriptions.add(readWriteLock.withReadLock(name, TTL, Mono.never()).subscribe());
        await().atMost(WAIT).until(() -> "1".equals(redis.call("ZCARD", "lock:{" + name + "}:permits"))
                && "1".equals(redis.call("ZCARD", "lock:{" + name + "}:rw:readers")));
        subscriptions.add(readWriteLock.withWriteLock(name, TTL, Mono.empty()).subscribe(value -> {}, error -> {}));
        await().atMost(WAIT).until(() -> "1".equals(redis.call("ZCARD", "lock:{" + name + "}:rw:writers-waiting")));
    }

    @Test
    void theReadOnlyUserListsAndInspectsWithoutAnyRefusalAndCannotForceRelease() {
        String holder = holdWithAWaiter("order:42");
        holdPermitsAndReadWithAWriterWaiting("exports");
        LockInspector inspector = inspectorAs("lock-inspector", READ_RULES);

        assertThat(inspector.names().collectList().block(WAIT)).containsExactlyInAnyOrder("order:42", "exports");
        LockState state = inspector.inspect("order:42").block(WAIT);
        assertThat(state.holder()).isEqualTo(holder);
        assertThat(state.fencingToken()).isPositive();
        assertThat(state.waiters()).singleElement().satisfies(waiter -> assertThat(waiter.leaseLeft()).isPositive());
        LockState shared = inspector.inspect("exports").block(WAIT);
        assertThat(shared.semaphore().permits()).isEqualTo(1);
        assertThat(shared.readWrite()).isEqualTo(new LockState.ReadWrite(null, null, null, 1, 1));
        assertThat(redis.callList("ACL", "LOG")).isEmpty();

        StepVerifier.create(inspector.forceRelease("order:42", holder))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(RedisCommandExecutionException.class)
                        .hasMessageStartingWith("NOPERM"))
                .verify(WAIT);
        assertThat(redis.call("EXISTS", "lock:{order:42}")).isEqualTo("1");
    }

    @Test
    void theAdminUserForceReleasesWithoutAnyRefusal() {
        String holder = holdWithAWaiter("stuck");
        LockInspector admin = inspectorAs("lock-admin", ADMIN_RULES);

        assertThat(admin.forceRelease("stuck", holder).block(WAIT)).isTrue();
        assertThat(redis.callList("ACL", "LOG")).isEmpty();
    }

    @Test
    void theSecurityPageShowsBothInspectorAclLines() throws IOException {
        String page = Files.readString(Path.of("..", "docs", "security.md"));
        assertThat(page).contains("ACL SETUSER lock-inspector on >password " + READ_RULES + "\n")
                .contains("ACL SETUSER lock-admin on >password " + ADMIN_RULES + "\n");
    }
}
