package io.reactivelock.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Arrays;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * A TCP proxy in front of one Redis that delays every chunk by a fixed time in each direction, so
 * that a loopback round trip looks like a network one. Bytes keep their order: each direction has
 * one thread that reads and one single-threaded timer that writes, and equal delays fire in the
 * order they were scheduled. Blocking threads are fine here: it runs beside the benchmark, not in
 * a reactive pipeline.
 */
final class LatencyProxy implements AutoCloseable {

    private final ServerSocket listener;
    private final long delayMicros;

    LatencyProxy(int targetPort, long delayMicros) throws IOException {
        this.delayMicros = delayMicros;
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread acceptor = Threads.named("proxy-accept-", true).newThread(() -> accept(targetPort));
        acceptor.start();
    }

    int port() {
        return listener.getLocalPort();
    }

    private void accept(int targetPort) {
        while (!listener.isClosed()) {
            try {
                Socket client = listener.accept();
                Socket server = new Socket();
                server.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), targetPort));
                client.setTcpNoDelay(true);
                server.setTcpNoDelay(true);
                pump(client, server);
                pump(server, client);
            } catch (IOException closed) {
                return;
            }
        }
    }

    private void pump(Socket from, Socket to) throws IOException {
        InputStream in = from.getInputStream();
        OutputStream out = to.getOutputStream();
        ScheduledExecutorService writer = Executors.newSingleThreadScheduledExecutor(Threads.named("proxy-write-", true));
        Threads.named("proxy-read-", true).newThread(() -> {
            byte[] buffer = new byte[64 * 1024];
            try {
                for (int n; (n = in.read(buffer)) >= 0; ) {
                    byte[] chunk = Arrays.copyOf(buffer, n);
                    writer.schedule(() -> {
                        try {
                            out.write(chunk);
                            out.flush();
                        } catch (IOException gone) {
                            close(from, to);
                        }
                    }, delayMicros, TimeUnit.MICROSECONDS);
                }
            } catch (IOException gone) {
                // the other side closed
            } finally {
                writer.schedule(() -> close(from, to), delayMicros, TimeUnit.MICROSECONDS);
                writer.shutdown();
            }
        }).start();
    }

    private static void close(Socket a, Socket b) {
        try {
            a.close();
            b.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    @Override
    public void close() throws IOException {
        listener.close();
    }
}
