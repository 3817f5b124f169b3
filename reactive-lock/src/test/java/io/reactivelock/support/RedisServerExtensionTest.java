package io.reactivelock.support;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer.OrderAnnotation;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/** Each test leaves the shared server in a state that the extension must repair before the next one. */
@WithRedis
@TestMethodOrder(OrderAnnotation.class)
class RedisServerExtensionTest {

    private static RedisServer fromBeforeAll;
    private static int port;

    private final RedisServer fromConstructor;

    RedisServerExtensionTest(RedisServer redis) {
        this.fromConstructor = redis;
    }

    @BeforeAll
    static void rememberTheServer(RedisServer redis) {
        fromBeforeAll = redis;
        port = redis.port();
    }

    @AfterAll
    static void nestedClassesLeaveTheServerRunning(RedisServer redis) {
        assertThat(redis.isRunning()).isTrue();
    }

    @Test
    @Order(1)
    void constructorsLifecycleMethodsAndTestsShareOneServer(RedisServer redis) {
        assertThat(redis).isSameAs(fromBeforeAll).isSameAs(fromConstructor);
    }

    @Test
    @Order(2)
    void aTestMayLeaveDataBehindAndTheServerPaused(RedisServer redis) {
        redis.call("SET", "k", "v");
        redis.pause();
        assertThat(redis.isPaused()).isTrue();
        assertThat(redis.ping(Duration.ofMillis(200))).as("no answer while paused").isFalse();
    }

    @Test
    @Order(3)
    void theNextTestFindsItResumedAndEmpty(RedisServer redis) {
        assertThat(redis.isPaused()).isFalse();
        assertThat(redis.call("DBSIZE")).isEqualTo("0");
    }

    @Test
    @Order(4)
    void aTestMayLeaveTheServerKilled(RedisServer redis) {
        redis.kill();
        assertThat(redis.isRunning()).isFalse();
        assertThat(redis.ping(Duration.ofSeconds(1))).as("refused while down").isFalse();
    }

    @Test
    @Order(5)
    void theNextTestFindsItRestartedOnTheSamePort(RedisServer redis) {
        assertThat(redis.isRunning()).isTrue();
        assertThat(redis.port()).isEqualTo(port);
        assertThat(redis.call("PING")).isEqualTo("PONG");
    }

    @Nested
    class InANestedClass {

        @Test
        void theEnclosingClassServerIsShared(RedisServer redis) {
            assertThat(redis).isSameAs(fromBeforeAll);
        }
    }
}
