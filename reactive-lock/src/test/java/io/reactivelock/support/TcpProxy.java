package io.reactivelock.support;

import io.lettuce.core.RedisURI;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * A TCP proxy on 127.0.0.1 in front of a Redis server, for injecting network faults into a
 * client under test: latency each way, replies dropped, traffic frozen (held, as a partition
 * with TCP retransmits would hold it), connections cut and new ones refused.
 *
 * <p>It runs on its own daemon threads with blocking sockets (two per direction and connection),
 * never on a reactive thread. Its controls take effect at once and may be called from any thread.
 * Bytes are delivered in order; a reply dropped by {@link #dropReplies} is gone for good, so a
 * client that keeps the connection would wait for it forever: follow it with
 * {@link #cutConnections()}, as a real network failure would end in a reset.
 */
public final class TcpProxy implements AutoCloseable {

    private static final long POLL_NANOS = Duration.ofMillis(1).toNanos();

    private final String targetHost;
    private final int targetPort;
    private final ServerSocket listener;
    private final Set<Link> links = ConcurrentHashMap.newKeySet();
    private final AtomicLong requestBytes = new AtomicLong();
    private final AtomicLong droppedReplyBytes = new AtomicLong();
    private final AtomicLong connectionsAccepted = new AtomicLong();
    private volatile long latencyNanos;
    private volatile boolean dropReplies;
    private volatile boolean frozen;
    private volatile boolean refusing;
    private volatile boolean closed;

    private TcpProxy(String targetHost, int targetPort) throws IOException {
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        this.listener = new ServerSocket();
        listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        daemon("tcp-proxy-accept-" + listener.getLocalPort(), this::acceptLoop).start();
    }

    /** Starts a proxy to {@code server} on a free loopback port. */
    public static TcpProxy to(RedisServer server) {
        try {
            return new TcpProxy(server.host(), server.port());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The port clients connect to. */
    public int port() {
        return listener.getLocalPort();
    }

    /** The URI of the proxied server as reached through this proxy. */
    public RedisURI uri() {
        return RedisURI.create("127.0.0.1", port());
    }

    /** Delays every chunk of bytes by {@code oneWay} in each direction (so a round trip by twice that). */
    public void latency(Duration oneWay) {
        latencyNanos = oneWay.toNanos();
    }

    /** While on, replies from the server are discarded; requests still reach it. */
    public void dropReplies(boolean drop) {
        dropReplies = drop;
    }

    /** Holds all traffic in both directions, in order, until {@link #unfreeze()} or a cut. */
    public void freeze() {
        frozen = true;
    }

    /** Delivers what {@link #freeze()} held, and resumes normal forwarding. */
    public void unfreeze() {
        frozen = false;
    }

    /** While on, new connections are closed as soon as they are accepted. */
    public void refuseConnections(boolean refuse) {
        refusing = refuse;
    }

    /** Closes every open connection on both sides, discarding whatever was held or in flight. */
    public void cutConnections() {
        for (Link link : List.copyOf(links)) { // not those a reconnecting client opens meanwhile
            link.close();
        }
    }

    /** Bytes received from clients so far, delivered or not. */
    public long requestBytes() {
        return requestBytes.get();
    }

    /** Bytes of replies discarded by {@link #dropReplies}. */
    public long droppedReplyBytes() {
        return droppedReplyBytes.get();
    }

    /** Client connections accepted (and forwarded) so far. */
    public long connectionsAccepted() {
        return connectionsAccepted.get();
    }

    @Override
    public void close() {
        closed = true;
        try {
            listener.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        cutConnections();
    }

    private void acceptLoop() {
        while (!closed) {
            Socket client;
            try {
                client = listener.accept();
            } catch (IOException e) {
                return; // closed
            }
            if (refusing) {
                closeQuietly(client);
                continue;
            }
            try {
                Socket server = new Socket(targetHost, targetPort);
                client.setTcpNoDelay(true);
                server.setTcpNoDelay(true);
                Link link = new Link(client, server);
                links.add(link);
                connectionsAccepted.incrementAndGet();
                link.start();
            } catch (IOException serverDown) {
                closeQuietly(client);
            }
        }
    }

    private static Thread daemon(String name, Runnable task) {
        Thread thread = new Thread(task, name);
        thread.setDaemon(true);
        return thread;
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException ignored) {
            // already closed
        }
    }

    private record Chunk(long deliverAtNanos, byte[] bytes) {}

    /** One client connection and its connection to the server. */
    private final class Link {
        private final Socket client;
        private final Socket server;
        private final Thread[] threads;

        Link(Socket client, Socket server) {
            this.client = client;
            this.server = server;
            BlockingQueue<Chunk> requests = new LinkedBlockingQueue<>();
            BlockingQueue<Chunk> replies = new LinkedBlockingQueue<>();
            String id = client.getPort() + "";
            this.threads = new Thread[] {
                daemon("tcp-proxy-read-requests-" + id, () -> read(client, requests, requestBytes)),
                daemon("tcp-proxy-write-requests-" + id, () -> write(requests, server, false)),
                daemon("tcp-proxy-read-replies-" + id, () -> read(server, replies, null)),
                daemon("tcp-proxy-write-replies-" + id, () -> write(replies, client, true)),
            };
        }

        void start() {
            for (Thread thread : threads) {
                thread.start();
            }
        }

        void close() {
            links.remove(this);
            closeQuietly(client);
            closeQuietly(server);
            for (Thread thread : threads) {
                thread.interrupt();
            }
        }

        private void read(Socket from, BlockingQueue<Chunk> queue, AtomicLong counter) {
            byte[] buffer = new byte[16 * 1024];
            try (InputStream in = from.getInputStream()) {
                int n;
                while ((n = in.read(buffer)) >= 0) {
                    if (counter != null) {
                        counter.addAndGet(n);
                    }
                    queue.add(new Chunk(System.nanoTime() + latencyNanos, Arrays.copyOf(buffer, n)));
                }
            } catch (IOException endOfLink) {
                // cut or closed by the other side
            }
            close();
        }

        private void write(BlockingQueue<Chunk> queue, Socket to, boolean isReply) {
            try {
                OutputStream out = to.getOutputStream();
                while (true) {
                    Chunk chunk = queue.take();
                    // Latency and freezing are simulated by waiting on this proxy's own thread.
                    long wait;
                    while ((wait = chunk.deliverAtNanos() - System.nanoTime()) > 0 || frozen) {
                        LockSupport.parkNanos(frozen ? POLL_NANOS : wait);
                        if (Thread.currentThread().isInterrupted()) {
                            return;
                        }
                    }
                    if (isReply && dropReplies) {
                        droppedReplyBytes.addAndGet(chunk.bytes().length);
                        continue;
                    }
                    out.write(chunk.bytes());
                    out.flush();
                }
            } catch (InterruptedException | IOException endOfLink) {
                close();
            }
        }
    }
}
