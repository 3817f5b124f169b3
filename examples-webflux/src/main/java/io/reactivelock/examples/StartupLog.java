package io.reactivelock.examples;

import io.reactivelock.examples.redis.RedisEndpoint;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.web.server.context.WebServerInitializedEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.stereotype.Component;

/** Says where the app and Redis listen, once the HTTP server is up. */
@Component
class StartupLog implements ApplicationListener<WebServerInitializedEvent> {

    private static final Logger log = LoggerFactory.getLogger(StartupLog.class);

    private final RedisEndpoint redis;
    private final String address;
    private final String database;

    StartupLog(RedisEndpoint redis, @Value("${server.address:0.0.0.0}") String address,
            @Value("${spring.r2dbc.url:}") String database) {
        this.redis = redis;
        this.address = address;
        this.database = database;
    }

    /** {@code r2dbc:postgresql://user:secret@db/shop} becomes {@code r2dbc:postgresql://***@db/shop}. */
    static String withoutCredentials(String url) {
        return url.replaceFirst("//[^/@]*@", "//***@");
    }

    @Override
    public void onApplicationEvent(WebServerInitializedEvent event) {
        log.info("reactive-lock example listening on http://{}:{} - Redis: {} - database: {}", address,
                event.getWebServer().getPort(), redis, withoutCredentials(database));
        log.info("Live view of the locks: http://{}:{}/locks", address, event.getWebServer().getPort());
    }
}
