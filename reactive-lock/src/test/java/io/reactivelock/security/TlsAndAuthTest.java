package io.reactivelock.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SslOptions;
import io.lettuce.core.SslVerifyMode;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import java.io.IOException;
import java.io.InputStream;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.CertPathBuilderException;
import java.security.cert.CertificateFactory;
import javax.net.ssl.TrustManagerFactory;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/**
 * The lock over {@code rediss://} with full certificate verification and username/password AUTH,
 * against a redis-server whose CA and certificate are made at test time. The server also keeps
 * its plain port, on which only the test itself talks (to create the user and read statistics),
 * and its default user requires a password, as in a locked-down deployment.
 */
class TlsAndAuthTest {

    private static final Duration TTL = Duration.ofSeconds(30);

    @TempDir
    static Path certificates;

    private static RedisServer redis;
    private static int tlsPort;
    private static Path trustedCa;
    private static Path unrelatedCa;

    private final List<ReactiveRedisLock> locks = new ArrayList<>();
    private final List<RedisClient> clients = new ArrayList<>();

    @BeforeAll
    static void startRedisWithTls() {
        TestCertificates ca = TestCertificates.authority("reactive-lock test CA");
        TestCertificates server = ca.issueForLoopback();
        trustedCa = ca.writeCertificate(certificates.resolve("ca.crt"));
        unrelatedCa = TestCertificates.authority("someone else's CA").writeCertificate(certificates.resolve("other-ca.crt"));
        // The harness picks the TLS port and picks again if another process takes it first. A
        // redis-server built without TLS fails here: the supported servers all have it.
        redis = RedisServer.startWithTls(
                "--tls-cert-file", server.writeCertificate(certificates.resolve("server.crt")).toString(),
                "--tls-key-file", server.writePrivateKey(certificates.resolve("server.key")).toString(),
                "--tls-ca-cert-file", trustedCa.toString(),
                "--tls-auth-clients", "no",
                "--requirepass", "admin-password");
        tlsPort = redis.tlsPort();
        LockUser.create(redis);
    }

    @AfterAll
    static void stopRedis() {
        if (redis != null) {
            redis.close();
        }
    }

    @AfterEach
    void tearDown() {
        locks.forEach(ReactiveRedisLock::close);
        clients.forEach(RedisClient::shutdown);
    }

    private static RedisURI rediss(String user, String password) {
        return RedisURI.builder(RedisURI.create("rediss://127.0.0.1:" + tlsPort))
                .withVerifyPeer(SslVerifyMode.FULL)
                .withAuthentication(user, password.toCharArray())
                .build();
    }

    /**
     * A client that trusts only {@code ca}, configured the way the README shows. The trust
     * manager is built here, once: given the PEM file instead, Lettuce would read it on the event
     * loop at every connect and reconnect (BlockHound reports it).
     */
    private RedisClient client(RedisURI uri, Path ca) {
        RedisClient client = RedisClient.create(uri);
        client.setOptions(ClientOptions.builder()
                .sslOptions(SslOptions.builder().jdkSslProvider().trustManager(trusting(ca)).build())
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .build());
        clients.add(client);
        return client;
    }

    private static TrustManagerFactory trusting(Path caPem) {
        try (InputStream in = Files.newInputStream(caPem)) {
            KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
            store.load(null, null);
            store.setCertificateEntry("ca", CertificateFactory.getInstance("X.509").generateCertificate(in));
            TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            factory.init(store);
            return factory;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("could not trust " + caPem, e);
        }
    }

    private ReactiveRedisLock lock(RedisClient client) {
        ReactiveRedisLock lock = ReactiveRedisLock.create(client, LockOptions.defaults());
        locks.add(lock);
        return lock;
    }

    private static List<Throwable> causes(Throwable e) {
        List<Throwable> chain = new ArrayList<>();
        for (Throwable t = e.getCause(); t != null; t = t.getCause()) {
            chain.add(t);
        }
        return chain;
    }

    private static long connectionsReceived() {
        return redis.call("INFO", "stats").lines()
                .filter(line -> line.startsWith("total_connections_received:"))
                .mapToLong(line -> Long.parseLong(line.substring(line.indexOf(':') + 1).trim()))
                .findFirst().orElseThrow();
    }

    @Test
    void theRightCaWithFullVerificationAndTheLockUserAcquiresAndReleases() {
        ReactiveRedisLock lock = lock(client(rediss(LockUser.NAME, LockUser.PASSWORD), trustedCa));
        StepVerifier.create(lock.withLock("order:42", TTL, lease ->
                        Mono.fromCallable(() -> redis.call("GET", "lock:{order:42}"))
                                .subscribeOn(Schedulers.boundedElastic())
                                .map(holder -> holder.equals(lease.token()))))
                .expectNext(true)
                .expectComplete().verify(Duration.ofSeconds(20));
        assertThat(redis.call("EXISTS", "lock:{order:42}")).isEqualTo("0");
        assertThat(redis.call("CLIENT", "LIST").lines().filter(client -> client.contains("user=" + LockUser.NAME)))
                .as("the lock's two connections, on the TLS port")
                .hasSize(2)
                .allSatisfy(client -> assertThat(client).contains("laddr=127.0.0.1:" + tlsPort + " "));
    }

    @Test
    void aServerCertificateFromAnotherCaFailsToConnectWithACertificatePathError() {
        RedisClient client = client(rediss(LockUser.NAME, LockUser.PASSWORD), unrelatedCa);
        assertThatThrownBy(() -> ReactiveRedisLock.create(client, LockOptions.defaults()))
                .isInstanceOf(RedisConnectionException.class)
                .hasMessageContaining("Unable to connect to 127.0.0.1")
                .hasStackTraceContaining("PKIX path building failed")
                .hasRootCauseInstanceOf(CertPathBuilderException.class)
                .satisfies(e -> assertThat(causes(e)).hasAtLeastOneElementOfType(SSLHandshakeException.class));
    }

    @Test
    void aServerCertificateTheJvmDoesNotTrustFailsTheUriFactoryToo() {
        // create(RedisURI) verifies against the JVM's default trust store, which does not know the test CA.
        assertThatThrownBy(() -> ReactiveRedisLock.create(rediss(LockUser.NAME, LockUser.PASSWORD)))
                .isInstanceOf(RedisConnectionException.class)
                .satisfies(e -> assertThat(causes(e)).hasAtLeastOneElementOfType(SSLHandshakeException.class));
    }

    @Test
    void aWrongPasswordFailsOnTheFirstConnectionWithWrongpassAndIsNotRetried() {
        RedisClient client = client(rediss(LockUser.NAME, "not-the-password"), trustedCa);
        long before = connectionsReceived();
        assertThatThrownBy(() -> ReactiveRedisLock.create(client, LockOptions.defaults()))
                .isInstanceOf(RedisConnectionException.class)
                .hasCauseInstanceOf(RedisCommandExecutionException.class)
                .cause().hasMessageStartingWith("WRONGPASS");
        // One connection from the lock (then given up), one from connectionsReceived() itself.
        assertThat(connectionsReceived() - before).isEqualTo(2);
    }

    @Test
    void noCredentialsFailOnTheFirstConnectionWithNoauth() {
        RedisURI anonymous = RedisURI.builder(RedisURI.create("rediss://127.0.0.1:" + tlsPort))
                .withVerifyPeer(SslVerifyMode.FULL).build();
        RedisClient client = client(anonymous, trustedCa);
        long before = connectionsReceived();
        assertThatThrownBy(() -> ReactiveRedisLock.create(client, LockOptions.defaults()))
                .isInstanceOf(RedisConnectionException.class)
                .hasCauseInstanceOf(RedisCommandExecutionException.class)
                .cause().hasMessageStartingWith("NOAUTH");
        assertThat(connectionsReceived() - before).isEqualTo(2);
    }
}
