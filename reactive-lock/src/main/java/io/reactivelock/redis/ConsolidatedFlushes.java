package io.reactivelock.redis;

import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.NettyCustomizer;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.flush.FlushConsolidationHandler;
import io.netty.handler.ssl.SslHandler;
import java.util.Objects;

/**
 * A Lettuce {@link NettyCustomizer} that lets each connection send, in one write, the commands
 * that one read of replies sets off, instead of one write (a system call, and a read for Redis)
 * per command. A lock's next command is most often sent from the reply of its last one, on the
 * connection's event loop: a grant runs the body, whose end sends the release. With many pairs in
 * flight, the replies of one read then send their next commands together, flushed once the read
 * ends (Netty's {@link FlushConsolidationHandler}); a command sent from any other thread is
 * flushed at once, as before.
 *
 * <p>{@link ReactiveRedisLock#create(io.lettuce.core.RedisURI, io.reactivelock.LockOptions)} and
 * the Spring Boot starter give their clients this customizer. For a client of your own, build its
 * resources with it: {@code ClientResources.builder().nettyCustomizer(new ConsolidatedFlushes())},
 * or {@link #sharing(ClientResources)} to keep the event loops of resources you have.
 */
public final class ConsolidatedFlushes implements NettyCustomizer {

    private final NettyCustomizer next;

    /** The customizer alone. */
    public ConsolidatedFlushes() {
        this(new NettyCustomizer() { });
    }

    /** This customizer after {@code next}, which customizes each connection first. */
    public ConsolidatedFlushes(NettyCustomizer next) {
        this.next = Objects.requireNonNull(next, "next");
    }

    /**
     * Resources that share {@code resources}' event loops and timers and add this customizer to its
     * own. Shut {@code resources} down, not the result: that would shut the shared threads down.
     */
    public static ClientResources sharing(ClientResources resources) {
        // mutate() copies the timer, the executors and the rest, but would start event loops of its own.
        return resources.mutate().eventLoopGroupProvider(resources.eventLoopGroupProvider())
                .nettyCustomizer(new ConsolidatedFlushes(resources.nettyCustomizer())).build();
    }

    @Override
    public void afterBootstrapInitialized(Bootstrap bootstrap) {
        next.afterBootstrapInitialized(bootstrap);
    }

    /**
     * Puts the handler where it sees every read begin and end and every flush on its way out: first
     * in the pipeline, or right after TLS, so that TLS too encrypts the consolidated writes at once.
     */
    @Override
    public void afterChannelInitialized(Channel channel) {
        next.afterChannelInitialized(channel);
        ChannelPipeline pipeline = channel.pipeline();
        ChannelHandlerContext tls = pipeline.context(SslHandler.class);
        if (tls == null) {
            pipeline.addFirst(new FlushConsolidationHandler());
        } else {
            pipeline.addAfter(tls.name(), null, new FlushConsolidationHandler());
        }
    }
}
