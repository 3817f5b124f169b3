package io.reactivelock.examples;

import java.time.Duration;
import java.util.List;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.client.reactive.ReactorClientHttpConnector;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Flux;
import reactor.netty.http.client.HttpClient;
import reactor.netty.resources.ConnectionProvider;

/**
 * Sends the same request {@code count} times at once, each on its own connection, and collects
 * the answers. Non-blocking WebClient, so that all requests really are in flight together.
 */
final class Concurrently {

    /** A safety net for a hung server, not a performance expectation. */
    private static final Duration GIVE_UP = Duration.ofMinutes(2);

    private Concurrently() {}

    static List<Answer> send(int port, int count, HttpMethod method, String path) {
        ConnectionProvider connections = ConnectionProvider.builder("concurrent-test-clients")
                .maxConnections(count)
                .pendingAcquireMaxCount(-1)
                .build();
        try {
            WebClient client = WebClient.builder()
                    .baseUrl("http://127.0.0.1:" + port)
                    .clientConnector(new ReactorClientHttpConnector(HttpClient.create(connections)))
                    .build();
            return Flux.range(0, count)
                    .flatMap(i -> client.method(method).uri(path).exchangeToMono(response -> response.bodyToMono(String.class)
                            .defaultIfEmpty("")
                            .map(body -> new Answer(response.statusCode().value(),
                                    response.headers().asHttpHeaders().getFirst(HttpHeaders.RETRY_AFTER), body))), count)
                    .collectList()
                    .block(GIVE_UP);
        } finally {
            connections.dispose();
        }
    }
}
