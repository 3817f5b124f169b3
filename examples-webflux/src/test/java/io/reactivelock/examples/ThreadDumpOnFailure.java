package io.reactivelock.examples;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;

/**
 * Writes every thread of this JVM, with the locks each holds and waits for, to
 * {@code target/thread-dumps/<class>.<method>.txt} when a test fails, then lets the failure
 * through: a request that got no answer in time (issue 36) shows there what each thread was doing
 * at that moment, in the clone that {@code .ci/stress} keeps of a red run.
 */
final class ThreadDumpOnFailure implements TestExecutionExceptionHandler {

    @Override
    public void handleTestExecutionException(ExtensionContext context, Throwable failure) throws Throwable {
        StringBuilder dump = new StringBuilder(Instant.now() + " " + failure + "\n\n");
        for (ThreadInfo thread : ManagementFactory.getThreadMXBean().dumpAllThreads(true, true)) {
            dump.append(thread.getThreadName()).append(' ').append(thread.getThreadState()).append('\n');
            for (StackTraceElement frame : thread.getStackTrace()) {
                dump.append("    at ").append(frame).append('\n');
            }
            if (thread.getLockName() != null) {
                dump.append("    waiting for ").append(thread.getLockName()).append(" held by ")
                        .append(thread.getLockOwnerName()).append('\n');
            }
            dump.append('\n');
        }
        Path file = Path.of("target", "thread-dumps",
                context.getRequiredTestClass().getSimpleName() + "." + context.getRequiredTestMethod().getName() + ".txt");
        try {
            Files.createDirectories(file.getParent());
            Files.writeString(file, dump);
        } catch (IOException e) {
            failure.addSuppressed(e);
        }
        throw failure;
    }
}
