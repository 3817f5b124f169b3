package io.reactivelock.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLease;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * A Redis user with the lock's ACL line but without {@code +info} (as a line written before the
 * replica acknowledgements had): replica-acknowledged grants (on by default) cannot learn how many
 * replicas to wait for. The client still connects, and each grant fails at once with
 * {@link LockAcquisitionException.Reason#NOT_REPLICATED}, naming the ACL rules to add and the
 * option that turns the acknowledgements off, and is released; it is not retried until the
 * acquire timeout.
 */
@WithRedis
class LockUserWithoutInfoTest {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(20);
    /** Long enough that an acquisition retried until its acquire timeout could not end within {@link #WAIT}. */
    private static final Duration ACQUIRE_TIMEOUT = Duration.ofMinutes(1);
    private static final String USER = "no-info";
    private static final String PASSWORD = "no-info-password";

    @Test
    void aUserWhoMayNotRunInfoConnectsButEachGrantFailsNotReplicatedAtOnceNamingTheAclRulesToAdd(RedisServer redis) {
        String rules = LockUser.rules(redis).replace(" +info ", " ");
        assertThat(rules).as("the lock user's rules less +info").isNotEqualTo(LockUser.rules(redis));
        LockUser.create(redis, USER, PASSWORD, rules);
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(LockUser.uri(redis, USER, PASSWORD),
                LockOptions.builder().acquireTimeout(ACQUIRE_TIMEOUT).build())) {
            List<Mono<String>> each = List.of(
                    lock.withLock("a", TTL, (LockLease lease) -> Mono.just("ran")),
                    lock.withLock("b", TTL, Mono.just("ran")),
                    lock.semaphore(2).withPermits("c", 1, TTL, Mono.just("ran")));
            for (Mono<String> acquisition : each) {
                StepVerifier.create(acquisition)
                        .expectErrorSatisfies(e -> {
                            assertThat(e).isInstanceOf(LockAcquisitionException.class);
                            LockAcquisitionException refused = (LockAcquisitionException) e;
                            assertThat(refused.reason()).isEqualTo(LockAcquisitionException.Reason.NOT_REPLICATED);
                            assertThat(refused.attempts()).as("attempts, not retried until the acquire timeout").isEqualTo(1);
                            assertThat(refused.getMessage()).as("what to grant, or what to turn off")
                                    .contains("ACL +info +wait").contains("replicaAcknowledgement(0)").contains("NOPERM");
                        })
                        .verify(WAIT);
            }
            await("the grants released").atMost(WAIT)
                    .until(() -> redis.call("EXISTS", "lock:{a}", "lock:{b}", "lock:{c}:permits").equals("0"));
        }
        try (ReactiveRedisLock lock = ReactiveRedisLock.create(LockUser.uri(redis, USER, PASSWORD),
                LockOptions.builder().replicaAcknowledgement(0).build())) {
            StepVerifier.create(lock.withLock("a", TTL, Mono.just("ran")))
                    .as("the same user with the acknowledgements off")
                    .expectNext("ran")
                    .expectComplete().verify(WAIT);
        }
    }
}
