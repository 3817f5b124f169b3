package io.reactivelock.support;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/** What only the local-process provider does. */
class ProcessRedisServerTest {

    @Test
    void listensOnLoopbackOnlyAndRestartsAsANewProcess() {
        try (RedisServer redis = ProcessRedisServer.start(List.of())) {
            assertThat(redis.host()).isEqualTo("127.0.0.1");
            assertThat(redis.callList("CONFIG", "GET", "bind")).containsExactly("bind", "127.0.0.1");
            long pid = redis.pid();

            redis.restart();

            assertThat(redis.pid()).isNotEqualTo(pid);
            assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)).isEmpty();
        }
    }

    @Test
    void aFailedStartReportsTheServerLog() {
        assertThatThrownBy(() -> ProcessRedisServer.start(List.of("--no-such-directive", "x")))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("exited with status")
                .hasMessageContaining("no-such-directive")
                .hasMessageContaining("Bad directive");
    }

    @Test
    void aConfiguredBinaryThatDoesNotExistIsReportedByName() {
        System.setProperty("redis.server", "/no/such/redis-server");
        try {
            assertThatThrownBy(() -> ProcessRedisServer.start(List.of()))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("/no/such/redis-server");
        } finally {
            System.clearProperty("redis.server");
        }
    }
}
