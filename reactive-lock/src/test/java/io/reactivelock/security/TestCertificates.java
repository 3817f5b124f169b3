package io.reactivelock.security;

import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.concurrent.atomic.AtomicLong;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcaPKCS8Generator;
import org.bouncycastle.util.io.pem.PemGenerationException;
import org.bouncycastle.operator.ContentSigner;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A certificate authority made at test time, and server certificates it signs, written as PEM
 * files for {@code redis-server --tls-*} and Lettuce. Nothing is read from or left on disk beyond
 * the directory given.
 */
final class TestCertificates {

    private static final AtomicLong SERIAL = new AtomicLong(System.currentTimeMillis());
    private static final Duration VALIDITY = Duration.ofDays(1);

    private final X500Name name;
    private final KeyPair keys;
    private final X509Certificate certificate;

    private TestCertificates(X500Name name, KeyPair keys, X509Certificate certificate) {
        this.name = name;
        this.keys = keys;
        this.certificate = certificate;
    }

    /** A new self-signed CA. */
    static TestCertificates authority(String commonName) {
        X500Name name = new X500Name("CN=" + commonName);
        KeyPair keys = newKeyPair();
        X509v3CertificateBuilder builder = builder(name, name, keys);
        try {
            builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
            builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new TestCertificates(name, keys, sign(builder, keys));
    }

    /** A server certificate for 127.0.0.1 (and localhost), signed by this CA. */
    TestCertificates issueForLoopback() {
        X500Name server = new X500Name("CN=localhost");
        KeyPair serverKeys = newKeyPair();
        X509v3CertificateBuilder builder = builder(name, server, serverKeys);
        try {
            builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
            builder.addExtension(Extension.keyUsage, true,
                    new KeyUsage(KeyUsage.digitalSignature | KeyUsage.keyEncipherment));
            builder.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName[] {
                    new GeneralName(GeneralName.iPAddress, "127.0.0.1"),
                    new GeneralName(GeneralName.dNSName, "localhost")}));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new TestCertificates(server, serverKeys, sign(builder, keys));
    }

    /** Writes the certificate as PEM to {@code file}; returns it. */
    Path writeCertificate(Path file) {
        return writePem(file, certificate);
    }

    /** Writes the private key as PKCS#8 PEM to {@code file}; returns it. */
    Path writePrivateKey(Path file) {
        try {
            return writePem(file, new JcaPKCS8Generator(keys.getPrivate(), null));
        } catch (PemGenerationException e) {
            throw new IllegalStateException("could not encode a test key", e);
        }
    }

    private static Path writePem(Path file, Object object) {
        StringWriter pem = new StringWriter();
        try (JcaPEMWriter writer = new JcaPEMWriter(pem)) {
            writer.writeObject(object);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try {
            return Files.writeString(file, pem.toString());
        } catch (IOException e) {
            throw new UncheckedIOException("could not write " + file, e);
        }
    }

    private static X509v3CertificateBuilder builder(X500Name issuer, X500Name subject, KeyPair subjectKeys) {
        Instant now = Instant.now();
        return new JcaX509v3CertificateBuilder(issuer, BigInteger.valueOf(SERIAL.incrementAndGet()),
                Date.from(now.minus(Duration.ofMinutes(5))), Date.from(now.plus(VALIDITY)), subject,
                subjectKeys.getPublic());
    }

    private static X509Certificate sign(X509v3CertificateBuilder builder, KeyPair issuerKeys) {
        try {
            ContentSigner signer = new JcaContentSignerBuilder("SHA256withECDSA").build(issuerKeys.getPrivate());
            return new JcaX509CertificateConverter().getCertificate(builder.build(signer));
        } catch (OperatorCreationException | GeneralSecurityException e) {
            throw new IllegalStateException("could not sign a test certificate", e);
        }
    }

    private static KeyPair newKeyPair() {
        try {
            KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
            generator.initialize(256);
            return generator.generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("EC P-256 is part of every JDK", e);
        }
    }
}
