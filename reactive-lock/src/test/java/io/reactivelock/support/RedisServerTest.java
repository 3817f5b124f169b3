package io.reactivelock.support;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The {@link RedisServer} contract, whichever provider runs it. */
@WithRedis
class RedisServerTest {

    @Test
    void startsAndAnswersPing(RedisServer redis) {
        assertThat(redis.isRunning()).isTrue();
        assertThat(redis.call("PING")).isEqualTo("PONG");
    }

    @Test
    void killThenRestartGivesAnEmptyServerOnTheSamePort(RedisServer redis) {
        redis.call("SET", "k", "v");
        int port = redis.port();

        redis.kill();
        assertThat(redis.isRunning()).isFalse();
        assertThat(redis.ping(Duration.ofSeconds(1))).as("refused while down").isFalse();

        redis.restart();
        assertThat(redis.port()).isEqualTo(port);
        assertThat(redis.call("DBSIZE")).isEqualTo("0");
    }

    @Test
    void pauseLeavesACommandUnansweredUntilResume(RedisServer redis) throws Exception {
        redis.pause();
        assertThat(redis.isPaused()).isTrue();
        try (Socket socket = new Socket(redis.host(), redis.port())) {
            socket.getOutputStream().write("PING\r\n".getBytes(US_ASCII));
            InputStream in = socket.getInputStream();
            socket.setSoTimeout(300);
            assertThatThrownBy(in::read).isInstanceOf(SocketTimeoutException.class);

            redis.resume();
            socket.setSoTimeout(5_000);
            assertThat(new String(in.readNBytes(7), US_ASCII)).isEqualTo("+PONG\r\n");
        }
        assertThat(redis.isPaused()).isFalse();
    }

    @Test
    void closeLeavesNoProcessAlive() {
        RedisServer server = RedisServer.start();
        long pid = server.pid();

        server.close();

        assertThat(server.isRunning()).isFalse();
        assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)).isEmpty();
    }

    @Test
    void closeEndsAPausedServerToo() {
        RedisServer server = RedisServer.start();
        long pid = server.pid();
        server.pause();

        server.close();

        assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)).isEmpty();
    }

    @Test
    void twoServersGetDifferentPortsAndSeparateData(RedisServer redis) {
        try (RedisServer other = RedisServer.start()) {
            assertThat(other.port()).isNotEqualTo(redis.port());
            other.call("SET", "k", "v");
            assertThat(redis.call("DBSIZE")).isEqualTo("0");
        }
    }

    @Test
    void callRendersEachReplyTypeAsAString(RedisServer redis) {
        assertThat(redis.call("SET", "k", "v")).isEqualTo("OK");
        assertThat(redis.call("GET", "k")).isEqualTo("v");
        assertThat(redis.call("GET", "missing")).isNull();
        assertThat(redis.call("INCR", "n")).isEqualTo("1");
        assertThat(redis.call("RPUSH", "list", "a", "b")).isEqualTo("2");
        assertThat(redis.call("LRANGE", "list", "0", "-1")).isEqualTo("a\nb");
        assertThat(redis.call("MGET", "k", "missing")).isEqualTo("v\n(nil)");
        assertThat(redis.call("SET", "ключ", "värde ✓ \r\n")).isEqualTo("OK");
        assertThat(redis.call("GET", "ключ")).isEqualTo("värde ✓ \r\n");
    }

    @Test
    void callListKeepsTheReplyStructure(RedisServer redis) {
        redis.call("SET", "k", "v");
        redis.call("SET", "n", "7");
        assertThat(redis.callList("MGET", "k", "missing", "n")).containsExactly("v", null, "7");
        assertThat(redis.callList("EVAL", "return {1, 'two', {3}}", "0")).containsExactly(1L, "two", List.of(3L));
        assertThat(redis.callList("BLPOP", "empty", "0.01")).isNull();
        assertThatThrownBy(() -> redis.callList("PING")).isInstanceOf(IllegalStateException.class).hasMessageContaining("not an array");
    }

    @Test
    void anErrorReplyIsThrownWithRedisMessage(RedisServer redis) {
        assertThatThrownBy(() -> redis.call("NO-SUCH-COMMAND"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("unknown command");
    }

    @Test
    void extraArgumentsReachTheServerAndAPasswordReachesCallAndUri() {
        try (RedisServer secured = RedisServer.start("--requirepass", "s3cret", "--maxmemory", "1mb")) {
            assertThat(secured.callList("CONFIG", "GET", "maxmemory")).containsExactly("maxmemory", "1048576");

            RedisClient client = RedisClient.create(secured.uri());
            try (StatefulRedisConnection<String, String> connection = client.connect()) {
                assertThat(connection.sync().ping()).isEqualTo("PONG");
            } finally {
                client.shutdown();
            }
        }
    }
}
