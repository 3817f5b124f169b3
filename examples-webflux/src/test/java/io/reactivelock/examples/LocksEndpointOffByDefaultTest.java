package io.reactivelock.examples;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.test.web.reactive.server.WebTestClient;

/** The app as it ships does not expose {@code /actuator/locks}: like any actuator endpoint, it must be exposed. */
@ExampleAppTest
class LocksEndpointOffByDefaultTest {

    @Autowired
    WebTestClient web;

    @Test
    @DisplayName("/actuator/locks is not there unless exposed")
    void notExposed() {
        web.get().uri("/actuator/locks").exchange().expectStatus().isNotFound();
        web.get().uri("/actuator/metrics").exchange().expectStatus().isOk();
    }
}
