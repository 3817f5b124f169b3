package io.reactivelock.support;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** A minimal blocking RESP2 client: one short-lived connection per command, for test setup and assertions. */
public final class Resp {

    private Resp() {
    }

    /**
     * Sends {@code command} (after {@code AUTH password} when a password is given) and returns the reply:
     * a {@code String} for simple and bulk strings, a {@code Long} for integers, {@code null} for nil and a
     * {@code List<Object>} of such values for arrays.
     *
     * @param timeout bounds the connect and every read
     * @throws IllegalStateException with Redis' message when Redis replies with an error
     * @throws IOException when Redis cannot be reached or does not answer in time
     */
    static Object call(String host, int port, String password, Duration timeout, String... command) throws IOException {
        int millis = (int) Math.min(Integer.MAX_VALUE, Math.max(1, timeout.toMillis()));
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host, port), millis);
            socket.setSoTimeout(millis);
            OutputStream out = new BufferedOutputStream(socket.getOutputStream());
            InputStream in = new BufferedInputStream(socket.getInputStream());
            if (password != null) {
                write(out, "AUTH", password);
            }
            write(out, command);
            out.flush();
            if (password != null) {
                read(in);
            }
            return read(in);
        }
    }

    /** The size in bytes of {@code command} as a client sends it: an array of bulk strings. */
    public static int size(String... command) {
        int size = ("*" + command.length + "\r\n").length();
        for (String arg : command) {
            int bytes = arg.getBytes(UTF_8).length;
            size += ("$" + bytes + "\r\n").length() + bytes + 2;
        }
        return size;
    }

    private static void write(OutputStream out, String... args) throws IOException {
        out.write(("*" + args.length + "\r\n").getBytes(UTF_8));
        for (String arg : args) {
            byte[] bytes = arg.getBytes(UTF_8);
            out.write(("$" + bytes.length + "\r\n").getBytes(UTF_8));
            out.write(bytes);
            out.write('\r');
            out.write('\n');
        }
    }

    private static Object read(InputStream in) throws IOException {
        int type = in.read();
        if (type == -1) {
            throw new EOFException("Redis closed the connection");
        }
        String line = readLine(in);
        switch (type) {
            case '+':
                return line;
            case '-':
                throw new IllegalStateException(line);
            case ':':
                return Long.parseLong(line);
            case '$': {
                int length = Integer.parseInt(line);
                if (length < 0) {
                    return null;
                }
                byte[] bytes = in.readNBytes(length);
                if (bytes.length < length || in.read() != '\r' || in.read() != '\n') {
                    throw new EOFException("truncated bulk string from Redis");
                }
                return new String(bytes, UTF_8);
            }
            case '*': {
                int count = Integer.parseInt(line);
                if (count < 0) {
                    return null;
                }
                List<Object> items = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    items.add(read(in));
                }
                return items;
            }
            default:
                throw new IOException("not a RESP2 reply: " + (char) type + line);
        }
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        for (int b = in.read(); ; b = in.read()) {
            if (b == -1) {
                throw new EOFException("Redis closed the connection mid-reply");
            }
            if (b == '\r') {
                if (in.read() != '\n') {
                    throw new IOException("malformed RESP2 line from Redis");
                }
                return line.toString(UTF_8);
            }
            line.write(b);
        }
    }
}
