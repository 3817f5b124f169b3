package io.reactivelock.examples.locks;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.reactivelock.micrometer.LockMetrics;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.io.Resource;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;
import org.springframework.http.MediaType;
import org.springframework.http.codec.ServerSentEvent;
import org.springframework.web.reactive.function.server.HandlerFunction;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;

/**
 * The live page {@code /locks}: a table of the locks held and a chart of the lock meters, fed by
 * server-sent events from {@code /locks/events} ({@link LockActivity}). The page, its script, its
 * style and its chart library (uPlot, from its WebJar) are read into memory at start-up and served
 * from there: nothing is loaded from elsewhere (the page works offline), and no request reads a
 * jar on an event loop.
 */
@Configuration(proxyBeanMethods = false)
public class LocksPage {

    /** The percentiles of the wait for a lock that the page charts. */
    static final double[] WAIT_PERCENTILES = {0.5, 0.99};

    private static final MediaType JAVASCRIPT = MediaType.parseMediaType("text/javascript;charset=UTF-8");
    private static final MediaType CSS = MediaType.parseMediaType("text/css;charset=UTF-8");
    private static final MediaType HTML = MediaType.parseMediaType("text/html;charset=UTF-8");

    @Bean
    RouterFunction<ServerResponse> locksPageRoutes(LockActivity activity) {
        return RouterFunctions.route()
                .GET("/locks", asset("classpath:locks-page/locks.html", HTML))
                .GET("/locks/locks.js", asset("classpath:locks-page/locks.js", JAVASCRIPT))
                .GET("/locks/locks.css", asset("classpath:locks-page/locks.css", CSS))
                .GET("/locks/uPlot.iife.min.js", asset("classpath*:META-INF/resources/webjars/uplot/*/dist/uPlot.iife.min.js", JAVASCRIPT))
                .GET("/locks/uPlot.min.css", asset("classpath*:META-INF/resources/webjars/uplot/*/dist/uPlot.min.css", CSS))
                .GET("/locks/events", request -> ServerResponse.ok()
                        .contentType(MediaType.TEXT_EVENT_STREAM)
                        .body(activity.snapshots().map(snapshot -> ServerSentEvent.builder(snapshot).event("snapshot").build()),
                                ServerSentEvent.class))
                .build();
    }

    /** A handler that answers with the one resource {@code location} finds, read now (at start-up). */
    private static HandlerFunction<ServerResponse> asset(String location, MediaType type) {
        String content;
        try {
            Resource[] found = new PathMatchingResourcePatternResolver().getResources(location);
            if (found.length != 1 || !found[0].exists()) {
                throw new IllegalStateException("Expected one resource at " + location + ", found " + found.length);
            }
            content = found[0].getContentAsString(StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("Could not read " + location, e);
        }
        return request -> ServerResponse.ok().contentType(type).bodyValue(content);
    }

    /**
     * Percentiles of {@value LockMetrics#ACQUIRE} over a window of 10 to 20 s, for the chart (they
     * also show in {@code /actuator/metrics} as {@code reactive.lock.acquire.percentile}).
     */
    @Bean
    MeterFilter lockWaitPercentiles() {
        return new MeterFilter() {
            @Override
            public DistributionStatisticConfig configure(Meter.Id id, DistributionStatisticConfig config) {
                if (!id.getName().equals(LockMetrics.ACQUIRE)) {
                    return config;
                }
                return DistributionStatisticConfig.builder()
                        .percentiles(WAIT_PERCENTILES)
                        .expiry(Duration.ofSeconds(10))
                        .bufferLength(2)
                        .build()
                        .merge(config);
            }
        };
    }
}
