package io.reactivelock.examples;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;

/**
 * A flash sale and a cached report, each protected by a {@link io.reactivelock.ReactiveRedisLock}.
 * See {@code README.md} next to this module's {@code pom.xml}.
 */
@SpringBootApplication
@ConfigurationPropertiesScan
public class ExampleApplication {

    public static void main(String[] args) {
        SpringApplication.run(ExampleApplication.class, args);
    }
}
