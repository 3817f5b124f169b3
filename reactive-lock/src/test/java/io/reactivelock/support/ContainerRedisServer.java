package io.reactivelock.support;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.model.ExposedPort;
import com.github.dockerjava.api.model.PortBinding;
import com.github.dockerjava.api.model.Ports;
import java.util.ArrayList;
import java.util.List;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.utility.DockerImageName;

/**
 * A {@code redis:7.4} container published on a fixed host port, so that {@link #restart()} (a new
 * container) keeps the port. Testcontainers' Ryuk removes containers left behind by a dead JVM.
 */
final class ContainerRedisServer extends RedisServer {

    private static final DockerImageName IMAGE = DockerImageName.parse("redis:7.4");
    private static final ExposedPort REDIS_PORT = ExposedPort.tcp(6379);

    private final List<String> extraArgs;
    private final int port;
    private GenericContainer<?> container;
    private long pid;
    private boolean paused;

    private ContainerRedisServer(List<String> extraArgs, int port) {
        super(extraArgs);
        this.extraArgs = extraArgs;
        this.port = port;
    }

    static boolean dockerAvailable() {
        return DockerClientFactory.instance().isDockerAvailable();
    }

    static ContainerRedisServer start(List<String> extraArgs) {
        ContainerRedisServer server = new ContainerRedisServer(extraArgs, freePort());
        server.launch();
        return server;
    }

    @Override
    public synchronized String host() {
        return container.getHost();
    }

    @Override
    public int port() {
        return port;
    }

    @Override
    public synchronized long pid() {
        return pid;
    }

    @Override
    public synchronized void stop() {
        resume();
        container.stop();
    }

    @Override
    public synchronized void kill() {
        if (isRunning()) {
            docker().killContainerCmd(container.getContainerId()).exec();
        }
        paused = false;
    }

    @Override
    public synchronized void restart() {
        stop();
        launch();
    }

    @Override
    public synchronized void pause() {
        if (!paused) {
            docker().pauseContainerCmd(container.getContainerId()).exec();
            paused = true;
        }
    }

    @Override
    public synchronized void resume() {
        if (paused && isRunning()) {
            docker().unpauseContainerCmd(container.getContainerId()).exec();
        }
        paused = false;
    }

    @Override
    public synchronized boolean isRunning() {
        return container.isRunning();
    }

    @Override
    public synchronized boolean isPaused() {
        return paused && isRunning();
    }

    @Override
    public synchronized void close() {
        stop();
    }

    private void launch() {
        List<String> command = new ArrayList<>(List.of("redis-server", "--save", "", "--appendonly", "no", "--protected-mode", "no"));
        command.addAll(extraArgs);
        GenericContainer<?> started = new GenericContainer<>(IMAGE)
                .withCommand(command.toArray(String[]::new))
                .withCreateContainerCmdModifier(create -> create
                        .withExposedPorts(REDIS_PORT)
                        .getHostConfig().withPortBindings(new PortBinding(Ports.Binding.bindPort(port), REDIS_PORT)))
                .waitingFor(Wait.forLogMessage(".*Ready to accept connections.*\\n", 1));
        started.start();
        container = started;
        pid = started.getContainerInfo().getState().getPidLong();
        paused = false;
    }

    private DockerClient docker() {
        return container.getDockerClient();
    }
}
