package io.reactivelock.inspect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockLease;
import io.reactivelock.LockOptions;
import io.reactivelock.ReactiveRedisLock;
import io.reactivelock.support.RedisSentinelSet;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Sinks;

/** An inspector made from a Sentinel {@link io.lettuce.core.RedisURI} reads the master the Sentinels name. */
class SentinelLockInspectorTest {

    private static final Duration WAIT = Duration.ofSeconds(30);

    private RedisSentinelSet sentinels;
    private ReactiveRedisLock lock;
    private LockInspector inspector;

    @BeforeEach
    void setUp() {
        sentinels = RedisSentinelSet.start();
        lock = ReactiveRedisLock.create(sentinels.uri(), LockOptions.defaults());
        inspector = LockInspector.create(sentinels.uri(), InspectorOptions.defaults());
    }

    @AfterEach
    void tearDown() {
        inspector.close();
        lock.close();
        sentinels.close();
    }

    @Test
    void aLockHeldOnTheMasterIsListedAndInspected() {
        AtomicReference<LockLease> lease = new AtomicReference<>();
        Disposable holder = lock.withLock("order", Duration.ofSeconds(10), granted -> {
            lease.set(granted);
            return Sinks.empty().asMono();
        }).subscribe();
        try {
            await().atMost(WAIT).until(() -> lease.get() != null);

            assertThat(inspector.names().collectList().block(WAIT)).containsExactly("order");
            LockState state = inspector.inspect("order").block(WAIT);
            assertThat(state.holder()).isEqualTo(sentinels.master().call("GET", "lock:{order}").substring(0, 8))
                    .isEqualTo(lease.get().token().substring(0, 8));
            assertThat(state.fencingToken()).isEqualTo(lease.get().fencingToken());
        } finally {
            holder.dispose();
        }
    }
}
