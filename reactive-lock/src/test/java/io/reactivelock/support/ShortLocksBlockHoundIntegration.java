package io.reactivelock.support;

import java.io.IOException;
import java.net.JarURLConnection;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLConnection;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;
import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Lets BlockHound accept short in-memory locks of Lettuce, Netty and the JDK that reactive code
 * cannot avoid, so that BlockHound's own error cannot corrupt them.
 *
 * <p>{@code io.lettuce.core.protocol.SharedLock} guards the writer count of a connection with a
 * {@code ReentrantLock} held for a few instructions, not for I/O; when two threads write at once
 * one of them parks briefly, which BlockHound reports. Worse, the error escapes from inside the
 * lock and leaves Lettuce's writer count negative, so every later write spins forever
 * (redis/lettuce#3804).
 *
 * <p>The JDK's {@code ScheduledThreadPoolExecutor} queue behind Reactor's parallel scheduler is
 * guarded the same way. Reactor allows its {@code offer} and {@code take}, but cancelling a
 * periodic timer (a disposed {@code Flux.interval}) reaches its {@code remove}, and an error thrown
 * from inside that lock's acquisition left the lock unusable: every later timer parked forever.
 *
 * <p>Netty's adaptive buffer allocator grows its set of magazines when threads contend for one (a
 * Cluster client connecting to every node at once does) and takes a {@code StampedLock} write lock
 * to retire the old one; Netty's own integration allows the allocator's thread-local set-up but not
 * this path. The error, thrown while a channel registers, left the connection's handshake unanswered
 * until its one-minute timeout.
 *
 * <p>The JDK's logging sets up its root handlers on the first record logged in the JVM, under a
 * {@code ReentrantLock}. When that first record is Lettuce's "Reconnecting" from two connections
 * at once (both lost their server), one of them parks there; BlockHound's error then ended that
 * connection's reconnection for good, and it stayed "not connected" after a Sentinel failover.
 *
 * <p>Lettuce's Cluster connection caches the write connection of each slot; storing one in that
 * cache takes its {@code stateLock} for a few instructions. Two threads writing to a slot whose
 * owner just changed (a slot migration) can meet there, and one parks briefly.
 *
 * <p>Lettuce caches how each sync API proxy maps its methods, under one lock for the JVM, and
 * builds such a proxy for every connection it opens, the Sentinel connection included that it opens
 * on an event executor to look the master up when a connection reconnects. Connections that
 * reconnect together (the Sentinels closed them when they demoted their master) meet there.
 *
 * <p>Nothing of this library is allowed here: its own code stays policed, also under these
 * allowances. An allowance covers whatever runs inside the allowed method, and
 * {@code SharedLock.doExclusive} runs Lettuce's reconnect and flush work, which can complete
 * commands and so run their callbacks, ours among them. So every method of the library is marked
 * as a place where blocking is reported: BlockHound goes by the innermost marked frame, so a
 * blocking call made while our code is on the stack is caught whatever an enclosing frame allows,
 * while the short locks our code itself reaches (a Lettuce write, a timer) stay allowed by their
 * own, inner frames.
 *
 * <p>The tests of every other module (the example app's too) use this same class through the
 * library's test jar.
 */
public final class ShortLocksBlockHoundIntegration implements BlockHoundIntegration {

    @Override
    public void applyTo(BlockHound.Builder builder) {
        builder.allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "incrementWriters");
        builder.allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "decrementWriters");
        builder.allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "doExclusive");
        // Reactor allows disposing SchedulerTask and WorkerTask but not PeriodicWorkerTask, which a
        // Flux.interval on a worker uses: cancelling a renewal ticker takes the queue's lock too.
        builder.allowBlockingCallsInside("reactor.core.scheduler.PeriodicWorkerTask", "dispose");
        builder.allowBlockingCallsInside("io.netty.buffer.AdaptivePoolingAllocator$MagazineGroup", "tryExpandMagazines");
        builder.allowBlockingCallsInside("java.util.logging.LogManager", "initializeGlobalHandlers");
        builder.allowBlockingCallsInside("io.lettuce.core.cluster.PooledClusterConnectionProvider", "getWriteConnection");
        // The same cache lock, taken again in the callbacks that store a node's new connection, on
        // the event loop that completed it (seen when the inspector scanned every master at once).
        builder.allowBlockingCallsInside("io.lettuce.core.cluster.PooledClusterConnectionProvider", "lambda$getWriteConnection$1");
        builder.allowBlockingCallsInside("io.lettuce.core.cluster.PooledClusterConnectionProvider$NodeConnectionPostProcessor",
                "lambda$apply$4");
        builder.allowBlockingCallsInside("io.lettuce.core.internal.AbstractInvocationHandler$MethodTranslator", "of");
        for (String method : new String[] {"offer", "take", "poll", "remove"}) {
            builder.allowBlockingCallsInside("java.util.concurrent.ScheduledThreadPoolExecutor$DelayedWorkQueue", method);
        }
        libraryMethods().forEach((type, methods) ->
                methods.forEach(method -> builder.disallowBlockingCallsInside(type, method)));
    }

    /**
     * The names of the methods (lambdas included, constructors not) of each class of the library,
     * by class name: the class files under {@code io/reactivelock} in every directory or jar of the
     * class path that has that package but is not a test output (the core, and the starter,
     * Micrometer, test-support, Kotlin modules or the example app where the test JVM has them).
     * They are read as files, never loaded: a class loaded before BlockHound installs is
     * retransformed, and lost its parameter names on the way (Spring then could not bind the
     * auto-configuration's settings record).
     */
    private static Map<String, Set<String>> libraryMethods() {
        Map<String, Set<String>> methods = new TreeMap<>();
        try {
            for (URL packageDir : Collections.list(ShortLocksBlockHoundIntegration.class.getClassLoader().getResources("io/reactivelock/"))) {
                String location = packageDir.toString();
                if (location.contains("/test-classes/") || location.contains("-tests.jar!")) {
                    continue; // the tests' own code and the harness
                }
                URLConnection connection = packageDir.openConnection();
                if (connection instanceof JarURLConnection jarEntry) {
                    try (FileSystem jar = FileSystems.newFileSystem(Path.of(jarEntry.getJarFileURL().toURI()))) {
                        libraryMethods(jar.getPath("/"), methods);
                    }
                } else {
                    libraryMethods(Path.of(packageDir.toURI()).getParent().getParent(), methods);
                }
            }
        } catch (IOException | URISyntaxException e) {
            throw new IllegalStateException("Cannot list the methods of the library", e);
        }
        return methods;
    }

    private static void libraryMethods(Path root, Map<String, Set<String>> methods) throws IOException {
        try (Stream<Path> files = Files.walk(root.resolve("io").resolve("reactivelock"))) {
            for (Path file : (Iterable<Path>) files.filter(f -> f.toString().endsWith(".class"))::iterator) {
                String className = root.relativize(file).toString().replace(".class", "").replace('/', '.');
                Set<String> names = new HashSet<>(ClassFile.read(Files.readAllBytes(file)).methods());
                names.removeIf(name -> name.startsWith("<")); // constructors and static initialisers cannot be marked
                methods.put(className, names);
            }
        }
    }
}
