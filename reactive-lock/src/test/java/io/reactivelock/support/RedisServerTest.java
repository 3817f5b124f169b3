package io.reactivelock.support;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The {@link RedisServer} harness, on whichever binary {@code -Dredis.server} chooses. */
@WithRedis
class RedisServerTest {

    @Test
    void theVersionPrintedForTheBuildLogIsTheVersionThatAnswers(RedisServer redis) {
        // Valkey's redis_version is the Redis version it is compatible with; its own is valkey_version.
        assertThat(redis.version()).isEqualTo(RedisBinary.version());
        assertThat(redis.call("INFO", "server")).contains(
                (redis.describe().startsWith("Valkey") ? "valkey_version:" : "redis_version:") + RedisBinary.version() + "\r\n");
    }

    @Test
    void listensOnLoopbackOnlyAndRestartsAsANewProcess(RedisServer redis) {
        assertThat(redis.host()).isEqualTo("127.0.0.1");
        assertThat(redis.listensOn()).containsExactly("127.0.0.1");
        long pid = redis.pid();

        redis.restart();

        assertThat(redis.pid()).isNotEqualTo(pid);
        assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)).isEmpty();
    }

    @Test
    void aFailedStartReportsTheServerLog() {
        assertThatThrownBy(() -> RedisServer.start("--no-such-directive", "x"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("exited with status")
                .hasMessageContaining("no-such-directive")
                .hasMessageContaining("Bad directive");
    }

    @ParameterizedTest
    @ValueSource(strings = {"/no/such/redis-server", "redis-server", "PATH"})
    void aChoiceOfServerThatIsNotABinaryIsRefusedByName(String choice) {
        String before = System.getProperty(RedisBinary.PROPERTY);
        System.setProperty(RedisBinary.PROPERTY, choice);
        try {
            assertThatThrownBy(RedisServer::start)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("embedded, path or the absolute path")
                    .hasMessageEndingWith(choice);
        } finally {
            if (before == null) {
                System.clearProperty(RedisBinary.PROPERTY);
            } else {
                System.setProperty(RedisBinary.PROPERTY, before);
            }
        }
    }

    /**
     * A JVM killed with SIGKILL runs no shutdown hook: the kernel kills its servers (parent-death
     * signal), and the next JVM to start a server deletes the directory it left.
     */
    @Test
    @EnabledOnOs(OS.LINUX)
    void aServerDiesWithItsJvmEvenWhenTheJvmIsKilledWithSigkill() throws Exception {
        assumeFalse(RedisBinary.isContainer(), "a container outlives a JVM killed with SIGKILL while Testcontainers' reaper (Ryuk)"
                + " is off; .ci/docker-down removes such containers by their label");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process jvm = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                "-D" + RedisBinary.PROPERTY + "=" + System.getProperty(RedisBinary.PROPERTY, "embedded"),
                ServerInAnotherJvm.class.getName())
                .redirectErrorStream(true)
                .start();
        long serverPid;
        Path files;
        try {
            BufferedReader output = new BufferedReader(new InputStreamReader(jvm.getInputStream(), US_ASCII));
            StringBuilder seen = new StringBuilder();
            String line;
            while ((line = output.readLine()) != null && !line.startsWith(ServerInAnotherJvm.STARTED)) {
                seen.append(line).append('\n');
            }
            assertThat(line).as("the other JVM started a server; its output:%n%s", seen).isNotNull();
            String[] started = line.substring(ServerInAnotherJvm.STARTED.length()).split(" ");
            serverPid = Long.parseLong(started[0]);
            files = Path.of(started[1]);
            assertThat(ProcessHandle.of(serverPid).filter(ProcessHandle::isAlive)).isPresent();
        } finally {
            jvm.destroyForcibly();
        }
        assertThat(jvm.waitFor(10, TimeUnit.SECONDS)).isTrue();

        await("the orphaned redis-server to die").atMost(Duration.ofSeconds(10))
                .until(() -> ProcessHandle.of(serverPid).filter(ProcessHandle::isAlive).isEmpty());
        assertThat(files).as("left by the killed JVM").isDirectory();
        RedisServer.Scratch.deleteLeftovers();
        assertThat(files).doesNotExist();
    }

    /** Starts a server, prints its pid and this JVM's directory, and waits to be killed. */
    static final class ServerInAnotherJvm {

        static final String STARTED = "started ";

        public static void main(String[] args) throws IOException {
            RedisServer server = RedisServer.start();
            System.out.println(STARTED + server.pid() + " " + RedisServer.Scratch.directory());
            System.out.flush();
            System.in.read();
        }
    }

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
