package io.reactivelock.scale;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockOptions;
import io.reactivelock.redis.ConsolidatedFlushes;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.Resp;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * The commands that one read of replies sets off reach Redis together ({@link ConsolidatedFlushes},
 * which the lock's own client has): here 64 grants come in one read, since Redis held the 64
 * acquisitions' {@code SET}s while writes were paused, and the releases their bodies send cost
 * Redis a read, not 64. {@code INFO stats} {@code total_reads_processed} counts Redis's reads of
 * client sockets.
 */
@WithRedis
class ConsolidatedFlushesTest {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final int PAIRS = 64;
    /** A {@code SET lock:{nNN} <token> NX PX 30000} as it travels: 6 bulk strings; a token is 32 hex digits and an address. */
    private static final int SET_BYTES = Resp.size("SET", "lock:{n00}", "0".repeat(32) + ":00000000", "NX", "PX", "30000");

    private final RedisServer redis;

    ConsolidatedFlushesTest(RedisServer redis) {
        this.redis = redis;
    }

    @Test
    void theReleasesThatOneReadOfGrantsSetsOffReachRedisInOneRead() throws Exception {
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), LockOptions.defaults())) {
            lock.withLock("warm-up", TTL, Mono.just(0)).block(TTL); // connected, release script loaded
            redis.call("CLIENT", "PAUSE", "60000", "WRITE");
            List<CompletableFuture<Integer>> pairs = new ArrayList<>();
            try {
                for (int i = 0; i < PAIRS; i++) {
                    pairs.add(lock.withLock("n%02d".formatted(i), TTL, Mono.just(i)).toFuture());
                }
                // Every SET is in Redis: the first blocked by the pause, the others in the query buffer behind it.
                await().until(() -> largestQueryBuffer() >= (PAIRS - 1) * SET_BYTES);
            } finally {
                redis.call("CLIENT", "UNPAUSE");
            }
            long readsBefore = readsProcessed();
            for (CompletableFuture<Integer> pair : pairs) {
                pair.get(10, TimeUnit.SECONDS);
            }
            long reads = readsProcessed() - readsBefore;
            System.err.println("[flushes] Redis reads while " + PAIRS + " grants came back and their releases went out: " + reads);
            // One read for the releases (two if the grants came in two reads), and this test's own INFO
            // on a fresh connection: its command and its close.
            assertThat(reads).as("Redis reads of client sockets for %d releases", PAIRS).isLessThanOrEqualTo(4);
            assertThat(redis.call("DBSIZE")).as("every lock released").isEqualTo("0");
        }
    }

    private long readsProcessed() {
        return Long.parseLong(redis.info("stats", "total_reads_processed"));
    }

    /** The largest query buffer of a client, in bytes ({@code qbuf} of {@code CLIENT LIST}). */
    private long largestQueryBuffer() {
        long largest = 0;
        for (String client : redis.call("CLIENT", "LIST").split("\r?\n")) {
            for (String field : client.split(" ")) {
                if (field.startsWith("qbuf=")) {
                    largest = Math.max(largest, Long.parseLong(field.substring("qbuf=".length())));
                }
            }
        }
        return largest;
    }
}
