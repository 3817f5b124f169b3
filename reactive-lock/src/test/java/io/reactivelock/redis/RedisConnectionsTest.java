package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.resource.ClientResources;
import io.netty.util.concurrent.EventExecutor;
import java.lang.reflect.Proxy;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Closing what a client of the lock's own owns. */
class RedisConnectionsTest {

    /**
     * The client's shutdown completes on one of its resources' event loops, and shutting the
     * resources down takes their executors' queue locks: BlockHound caught that wait on an event
     * loop in a CI run (a contended lock, so not every run). The shutdown must happen elsewhere.
     */
    @Test
    void resourcesAreShutDownOnAThreadThatMayBlockEvenWhenAskedOnTheirEventLoop() throws Exception {
        ClientResources real = ClientResources.create();
        AtomicReference<Thread> shutDownOn = new AtomicReference<>();
        ClientResources recording = (ClientResources) Proxy.newProxyInstance(ClientResources.class.getClassLoader(),
                new Class<?>[] {ClientResources.class}, (proxy, method, args) -> {
                    if (method.getName().equals("shutdown") && method.getParameterCount() == 0) {
                        shutDownOn.set(Thread.currentThread());
                    }
                    return method.invoke(real, args);
                });
        EventExecutor loop = real.eventExecutorGroup().next();

        CompletableFuture<Void> done = loop.submit(() -> RedisConnections.shutdown(recording)).get(10, TimeUnit.SECONDS);
        done.get(30, TimeUnit.SECONDS);

        assertThat(shutDownOn.get()).isNotNull();
        assertThat(shutDownOn.get().getName()).as("the thread that shut the resources down").startsWith("boundedElastic");
        assertThat(loop.isTerminated()).isTrue();
    }
}
