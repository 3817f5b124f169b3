package io.reactivelock.examples;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.webtestclient.autoconfigure.AutoConfigureWebTestClient;

/**
 * The app as it ships (embedded Redis, H2 in memory, the lock on), on a random port; one Spring
 * context shared by every class that uses this annotation.
 *
 * <p>The only change: a generous acquire timeout, so that 200 buyers queueing for one SKU on a
 * slow 2-core CI machine are answered by the sale ("sold out"), not by the lock ("too busy").
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT, properties = "reactive-lock.acquire-timeout=60s")
@AutoConfigureWebTestClient
public @interface ExampleAppTest {}
