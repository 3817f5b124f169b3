package io.reactivelock.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.reactivelock.examples.redis.EmbeddedRedisServer;
import io.reactivelock.examples.redis.RedisEndpoint;
import io.reactivelock.examples.report.ReportService;
import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * Starts the real application, as {@code main} does, to check where it finds Redis. Each test
 * runs its own app and stops it, so that what happens on shutdown can be checked too.
 */
class RedisStartupTest {

    @Test
    @DisplayName("with no Redis configured the app starts an embedded redis-server on 127.0.0.1, uses it, and stops it on shutdown")
    void embeddedRedisByDefault() {
        EmbeddedRedisServer embedded;
        String sku;
        String report;
        // Empty, whatever the environment of the build says: this is the no-configuration case.
        try (ConfigurableApplicationContext app = start("--example.redis.url=")) {
            embedded = app.getBean(RedisEndpoint.class).embeddedServer();
            assertThat(embedded).isNotNull();
            assertThat(embedded.isRunning()).isTrue();
            assertThat(embedded.url()).startsWith("redis://127.0.0.1:");

            Sales sales = new Sales(client(app));
            sku = sales.newSku(1);
            client(app).post().uri("/skus/{sku}/purchase", sku).exchange().expectStatus().isCreated();
            report = "q-embedded";
            client(app).get().uri("/reports/{id}", report).exchange().expectStatus().isOk();

            assertThat(keys(embedded.url())).contains("lock:{sale:" + sku + "}:fence", ReportService.cacheKey(report));
        }
        assertThat(embedded.isRunning()).isFalse();
        assertThat(accepts(embedded.port())).isFalse();
    }

    @Test
    @DisplayName("with REDIS_URL set the app uses that server and starts none of its own")
    void configuredRedis() {
        // A second redis-server, started by the test: the "external" one.
        try (EmbeddedRedisServer external = EmbeddedRedisServer.start()) {
            // REDIS_URL given as a property resolves exactly as the environment variable would.
            try (ConfigurableApplicationContext app = start("--REDIS_URL=" + external.url())) {
                RedisEndpoint endpoint = app.getBean(RedisEndpoint.class);
                assertThat(endpoint.embeddedServer()).isNull();
                assertThat(endpoint.uri().getPort()).isEqualTo(external.port());

                String sku = new Sales(client(app)).newSku(1);
                client(app).post().uri("/skus/{sku}/purchase", sku).exchange().expectStatus().isCreated();
                client(app).get().uri("/reports/{id}", "q-external").exchange().expectStatus().isOk();

                assertThat(keys(external.url())).contains("lock:{sale:" + sku + "}:fence", ReportService.cacheKey("q-external"));
            }
            // Not ours to stop: the app left it running.
            assertThat(external.isRunning()).isTrue();
        }
    }

    private static ConfigurableApplicationContext start(String... args) {
        String[] all = new String[args.length + 1];
        all[0] = "--server.port=0";
        System.arraycopy(args, 0, all, 1, args.length);
        return new SpringApplicationBuilder(ExampleApplication.class).main(ExampleApplication.class).run(all);
    }

    private static WebTestClient client(ConfigurableApplicationContext app) {
        int port = ((WebServerApplicationContext) app).getWebServer().getPort();
        return WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port).build();
    }

    /** Every key in that Redis; blocking, from the test thread. */
    private static List<String> keys(String url) {
        RedisClient client = RedisClient.create(RedisURI.create(url));
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            return connection.sync().keys("*");
        } catch (RedisConnectionException e) {
            throw new AssertionError("Could not reach " + url, e);
        } finally {
            client.shutdown();
        }
    }

    private static boolean accepts(int port) {
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port)) {
            return socket.isConnected();
        } catch (IOException e) {
            return false;
        }
    }
}
