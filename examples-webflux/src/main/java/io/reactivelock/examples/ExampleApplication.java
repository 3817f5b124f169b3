package io.reactivelock.examples;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;
import org.springframework.scheduling.annotation.EnableScheduling;

/**
 * A flash sale and a cached report, each protected by a {@link io.reactivelock.redis.ReactiveRedisLock},
 * and a scheduled refresh of the popular reports that one instance at a time runs. See
 * {@code README.md} next to this module's {@code pom.xml}.
 */
@SpringBootApplication
@ConfigurationPropertiesScan
@EnableScheduling
public class ExampleApplication {

    public static void main(String[] args) {
        SpringApplication.run(ExampleApplication.class, args);
    }
}
