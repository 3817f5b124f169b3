package io.reactivelock.examples;

import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The example's settings, under {@code example.*} in {@code application.yaml} (where every default
 * lives, with a comment).
 *
 * @param redis where Redis is
 * @param lock the example's use of the lock
 * @param sale the flash sale
 * @param reports the cached reports
 */
@ConfigurationProperties("example")
public record ExampleProperties(Redis redis, Lock lock, Sale sale, Reports reports) {

    /** @param url a Redis URI ({@code redis://host:port}); empty starts an embedded redis-server */
    public record Redis(@Nullable String url) {

        public boolean embedded() {
            return url == null || url.isBlank();
        }
    }

    /**
     * The lock's own options (key prefix, acquire timeout, backoff, fair mode, ...) are the
     * library's {@code reactive-lock.*} properties; these are the example's.
     *
     * @param enabled false runs purchases and report computations WITHOUT the lock; it exists only
     *     for the negative-control test, which shows what goes wrong then
     * @param retryAfter the {@code Retry-After} sent with a 503 for a busy or lost lock
     */
    public record Lock(boolean enabled, Duration retryAfter) {}

    /**
     * @param lockTtl how long the lock of a SKU outlives a holder that crashed
     * @param paymentLatency how long the simulated payment provider takes to answer
     */
    public record Sale(Duration lockTtl, Duration paymentLatency) {}

    /**
     * @param lockTtl how long the lock of a report outlives a holder that crashed
     * @param cacheTtl how long a computed report stays in the Redis cache
     * @param computeTime how long the simulated expensive computation takes
     */
    public record Reports(Duration lockTtl, Duration cacheTtl, Duration computeTime) {}
}
