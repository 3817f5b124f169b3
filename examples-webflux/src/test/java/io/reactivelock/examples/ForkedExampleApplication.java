package io.reactivelock.examples;

import io.reactivelock.support.BlockHoundActiveTest;
import reactor.blockhound.BlockHound;

/**
 * {@link ExampleApplication#main} for a JVM a test forks: under BlockHound, with the integrations
 * of the test JVMs, and exiting with an error if BlockHound is not active there.
 */
public final class ForkedExampleApplication {

    private ForkedExampleApplication() {}

    public static void main(String[] args) {
        BlockHound.install();
        BlockHoundActiveTest.requireActive();
        ExampleApplication.main(args);
    }
}
