package io.reactivelock.examples;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.webtestclient.autoconfigure.AutoConfigureWebTestClient;
import org.springframework.test.web.reactive.server.WebTestClient;

/** {@code /actuator/locks} exposed without {@code reactive-lock.inspector.force-release-enabled}: it only reads. */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = "management.endpoints.web.exposure.include=health,metrics,locks")
@AutoConfigureWebTestClient
class LocksEndpointReadOnlyTest {

    @Autowired
    WebTestClient web;

    @Test
    @DisplayName("without force-release enabled the endpoint reads but has no DELETE")
    void readsButCannotForceRelease() {
        web.get().uri("/actuator/locks").exchange().expectStatus().isOk();
        web.get().uri("/actuator/locks/{name}", "a").exchange().expectStatus().isOk();
        web.delete().uri("/actuator/locks/{name}?holder={holder}", "a", "00000000").exchange()
                .expectStatus().isEqualTo(405);
    }
}
