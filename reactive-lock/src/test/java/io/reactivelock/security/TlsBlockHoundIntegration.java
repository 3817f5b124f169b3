package io.reactivelock.security;

import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Lets BlockHound accept the one blocking call of a TLS connect that no user of Lettuce can
 * avoid: Lettuce builds a JDK {@code SSLContext} for every connection on the Netty event loop,
 * and its initialisation seeds a {@code SecureRandom} from {@code /dev/urandom} (Linux's
 * {@code NativePRNG}), a read that does not wait in practice but is file I/O. Only that JDK
 * method is allowed; reading a trust store file at connect time stays reported (give Lettuce a
 * {@code TrustManagerFactory} built at start-up instead, as {@link TlsAndAuthTest} does).
 */
public final class TlsBlockHoundIntegration implements BlockHoundIntegration {

    @Override
    public void applyTo(BlockHound.Builder builder) {
        builder.allowBlockingCallsInside("sun.security.ssl.SSLContextImpl", "engineInit");
    }
}
