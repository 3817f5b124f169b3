package io.reactivelock.redis;

import static io.reactivelock.redis.EveryPrimitive.TTL;
import static io.reactivelock.redis.EveryPrimitive.WAIT;
import static io.reactivelock.redis.OneClientTest.CLIENT_NAME;
import static io.reactivelock.redis.OneClientTest.field;
import static io.reactivelock.redis.OneClientTest.namedConnections;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisURI;
import io.reactivelock.LockOptions;
import io.reactivelock.support.NeedsRedis;
import io.reactivelock.support.RedisSentinelSet;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * One {@link ReactiveRedisLock} made from a Sentinel {@link RedisURI}: every primitive it hands out
 * works on the master the Sentinels name, over the client's three connections to that master: commands,
 * pub/sub, and the grants' own, whose writes the replica acknowledges ({@link ReplicaAcks}).
 */
@NeedsRedis
class SentinelOneClientTest {

    private static RedisSentinelSet sentinels;

    @BeforeAll
    static void startSentinels() {
        sentinels = RedisSentinelSet.start();
    }

    @AfterAll
    static void stopSentinels() {
        sentinels.close();
    }

    @Test
    void everyPrimitiveOfOneClientWorksOnTheMasterOverItsThreeConnections() {
        RedisURI uri = sentinels.uri();
        uri.setClientName(CLIENT_NAME);
        try (ReactiveRedisLock client = ReactiveRedisLock.create(uri, LockOptions.defaults())) {
            List<String> opened = namedConnections(sentinels.master());
            assertThat(opened).as("the client's connections to the master").hasSize(3);
            List<String> ids = opened.stream().map(line -> field(line, "id")).toList();

            EveryPrimitive.useEachOnce(client, "order:1", "order:2");
            assertThat(sentinels.master().call("GET", "lock:{order:1}:fence")).as("the fencing record, on the master")
                    .isNotNull();
            assertThat(namedConnections(sentinels.master())).as("the client's connections after using every primitive")
                    .extracting(line -> field(line, "id")).containsExactlyInAnyOrderElementsOf(ids);

            Sinks.Empty<Void> release = Sinks.empty();
            Disposable holder = client.withLock("order:1", TTL, release.asMono()).subscribe();
            Disposable waiter = client.withLock("order:1", TTL, Mono.just("next")).subscribe();
            try {
                await("the waiter's subscription").atMost(WAIT).until(() -> namedConnections(sentinels.master()).stream()
                        .anyMatch(line -> field(line, "flags").contains("P")));
                List<String> waiting = namedConnections(sentinels.master());
                assertThat(waiting).extracting(line -> field(line, "id")).containsExactlyInAnyOrderElementsOf(ids);
                assertThat(waiting).filteredOn(line -> field(line, "flags").contains("P")).as("pub/sub connections").hasSize(1);
            } finally {
                release.tryEmitEmpty();
                holder.dispose();
                waiter.dispose();
            }
        }
    }
}
