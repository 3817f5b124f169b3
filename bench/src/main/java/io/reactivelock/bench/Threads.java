package io.reactivelock.bench;

import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicInteger;

final class Threads {

    private Threads() {}

    static ThreadFactory named(String prefix, boolean daemon) {
        AtomicInteger count = new AtomicInteger();
        return runnable -> {
            Thread thread = new Thread(runnable, prefix + count.incrementAndGet());
            thread.setDaemon(daemon);
            return thread;
        };
    }

    /** The two started threads every critical section leaves on (its body hops there). */
    static ThreadPoolExecutor hopExecutor() {
        ThreadPoolExecutor executor = (ThreadPoolExecutor) Executors.newFixedThreadPool(2, named("hop-", true));
        executor.prestartAllCoreThreads();
        return executor;
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}
