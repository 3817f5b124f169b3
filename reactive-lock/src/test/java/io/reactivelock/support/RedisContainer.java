package io.reactivelock.support;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.model.ExposedPort;
import com.github.dockerjava.api.model.PortBinding;
import com.github.dockerjava.api.model.Ports;
import java.util.ArrayList;
import java.util.Locale;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.AbstractWaitStrategy;
import org.testcontainers.utility.DockerImageName;

/**
 * One {@code redis-server} in a container of a Docker engine, for {@link RedisServer} under
 * {@code -Dredis.server=container}: Testcontainers' {@link GenericContainer} on an image with
 * {@code redis-server} as its entry point, its port 6379 published on 127.0.0.1 only, on the port the
 * harness chose (so that it stays the same across a restart, which starts a new container).
 *
 * <p>Containers are labelled {@value #LABEL}; a shutdown hook removes those still running when the JVM
 * exits, and {@code .ci/docker-down} removes those of a JVM that died without running hooks (Ryuk,
 * Testcontainers' own reaper, is off where its image cannot be pulled).
 */
final class RedisContainer {

    static final String LABEL = "io.reactivelock.test";
    private static final int REDIS_PORT = 6379;
    private static final Set<RedisContainer> LIVE = ConcurrentHashMap.newKeySet();
    private static final Pattern EXITED = Pattern.compile("(?:exited with code |exitCode=)(-?\\d+)");

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(RedisContainer::stop), "redis-container-reaper"));
    }

    private final GenericContainer<?> container;
    /** What the server printed, kept here since a container that failed to start is removed with its logs. */
    private final StringBuffer output = new StringBuffer();

    private RedisContainer(GenericContainer<?> container) {
        this.container = container;
    }

    /** Whether a Docker engine answers (Testcontainers' own check, done once per JVM). */
    static boolean dockerAnswers() {
        try {
            return DockerClientFactory.instance().isDockerAvailable();
        } catch (RuntimeException | LinkageError unusable) {
            return false;
        }
    }

    /**
     * Starts {@code image} with {@code args} after its entry point, published on 127.0.0.1:{@code hostPort};
     * throws {@link PortTakenException} if that port is taken.
     */
    static RedisContainer start(String image, int hostPort, List<String> args) {
        List<String> command = new ArrayList<>(List.of("--port", Integer.toString(REDIS_PORT)));
        command.addAll(args);
        GenericContainer<?> container = new GenericContainer<>(DockerImageName.parse(image))
                .withExposedPorts(REDIS_PORT)
                .withLabel(LABEL, "redis-server")
                .withCommand(command.toArray(String[]::new))
                // Started is enough here: RedisServer waits for PING itself (a port probe would run a shell
                // inside the container, which an image of the binary alone does not have).
                .waitingFor(new Started())
                .withCreateContainerCmdModifier(create -> create.getHostConfig().withPortBindings(
                        new PortBinding(Ports.Binding.bindIpAndPort(RedisServer.LOOPBACK, hostPort), ExposedPort.tcp(REDIS_PORT))));
        RedisContainer redis = new RedisContainer(container);
        container.withLogConsumer(frame -> redis.output.append(frame.getUtf8String()));
        try {
            container.start();
        } catch (RuntimeException e) {
            container.stop();
            String exit = exit(e, redis.output.toString());
            if (causes(e, "port is already allocated") || causes(e, "address already in use")) {
                throw new PortTakenException(e);
            }
            throw new IllegalStateException("redis-server in a container of " + image + " " + exit
                    + "\n  command: " + String.join(" ", command), e);
        }
        LIVE.add(redis);
        return redis;
    }

    private static boolean causes(Throwable e, String message) {
        for (Throwable cause = e; cause != null; cause = cause.getCause()) {
            if (cause.getMessage() != null && cause.getMessage().toLowerCase(Locale.ROOT).contains(message)) {
                return true;
            }
        }
        return false;
    }

    private DockerClient docker() {
        return container.getDockerClient();
    }

    String id() {
        return container.getContainerId();
    }

    /** The image's name, as the tests asked for it. */
    String image() {
        return container.getDockerImageName();
    }

    /** The host's process id of the container's {@code redis-server}. */
    long pid() {
        Long pid = docker().inspectContainerCmd(id()).exec().getState().getPidLong();
        if (pid == null || pid == 0) {
            throw new IllegalStateException("container " + id() + " has no process");
        }
        return pid;
    }

    /** The exit status of a container that has stopped. */
    Long exitCode() {
        return docker().inspectContainerCmd(id()).exec().getState().getExitCodeLong();
    }

    boolean isRunning() {
        return container.isRunning();
    }

    /** Freezes every process of the container (the cgroup freezer): connections are accepted, nothing answered. */
    void pause() {
        docker().pauseContainerCmd(id()).exec();
    }

    void unpause() {
        docker().unpauseContainerCmd(id()).exec();
    }

    /** SIGKILL to the server, as a crash; the container is removed. */
    void kill() {
        if (isRunning()) {
            docker().killContainerCmd(id()).exec();
        }
        stop();
    }

    /** Stops and removes the container; idempotent. */
    void stop() {
        LIVE.remove(this);
        container.stop();
    }

    /** How a container that failed to start ended (Testcontainers says it in a cause), with what it printed. */
    private static String exit(RuntimeException failure, String output) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            Matcher exited = EXITED.matcher(String.valueOf(cause.getMessage()));
            if (exited.find()) {
                return "exited with status " + exited.group(1) + "\n  its output:\n" + output;
            }
        }
        return "did not start (" + failure + ")\n  its output:\n" + output;
    }

    /** The container is started; nothing more to wait for. */
    private static final class Started extends AbstractWaitStrategy {

        @Override
        protected void waitUntilReady() {
            // RedisServer polls PING.
        }
    }

    /** The host addresses the server's port is published on. */
    List<String> publishedOn() {
        Ports.Binding[] bindings = docker().inspectContainerCmd(id()).exec().getNetworkSettings().getPorts()
                .getBindings().get(ExposedPort.tcp(REDIS_PORT));
        return bindings == null ? List.of() : Stream.of(bindings).map(Ports.Binding::getHostIp).distinct().toList();
    }

    /** What the server printed. */
    String logs() {
        return output.toString();
    }

    /** The host port a container was to publish on is taken. */
    static final class PortTakenException extends RuntimeException {

        private static final long serialVersionUID = 1L;

        PortTakenException(Throwable cause) {
            super(cause);
        }
    }
}
