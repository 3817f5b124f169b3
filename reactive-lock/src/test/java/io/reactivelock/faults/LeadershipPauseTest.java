package io.reactivelock.faults;

import static io.reactivelock.faults.Faults.TOLD_LATE;
import static io.reactivelock.faults.Faults.exists;
import static io.reactivelock.faults.Faults.report;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.reactivelock.LeaderElection;
import io.reactivelock.Leadership;
import io.reactivelock.Leadership.State;
import io.reactivelock.LockLostException;
import io.reactivelock.LockOptions;
import io.reactivelock.redis.ReactiveRedisLock;
import io.reactivelock.support.RedisServer;
import io.reactivelock.support.WithRedis;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * Fault 2 for leadership: Redis frozen ({@code SIGSTOP}) past the lease of a term. The leader is
 * told {@link State#LOST} when its lease runs out, not before and not much later, and the work run
 * {@code whileLeader} is cancelled then; once Redis wakes, both candidates are elected again.
 */
@WithRedis
class LeadershipPauseTest {

    private static final Duration TTL = Duration.ofSeconds(2);

    @Test
    void aLeaderFrozenOutPastItsLeaseIsToldLostAndItsWorkCancelledWhenTheLeaseRunsOutThenCampaignsAgain(RedisServer redis) {
        ReactiveRedisLock lock = ReactiveRedisLock.create(redis.uri(), LockOptions.builder()
                .commandTimeout(Duration.ofMillis(200)).build());
        List<Leadership> told = new CopyOnWriteArrayList<>();
        AtomicLong lostAt = new AtomicLong();
        List<Leadership> workTerms = new CopyOnWriteArrayList<>();
        AtomicLong workCancelledAt = new AtomicLong();
        LeaderElection election = LeaderElection.of(lock);
        Disposable x = election.lead("x", TTL).subscribe(l -> {
            if (l.state() == State.LOST) {
                lostAt.compareAndSet(0, System.nanoTime());
            }
            told.add(l);
        });
        Disposable y = election.whileLeader("y", TTL, l -> {
            workTerms.add(l);
            return Mono.never().doOnCancel(() -> workCancelledAt.compareAndSet(0, System.nanoTime()));
        }).subscribe();
        try {
            await().pollInterval(Duration.ofMillis(5)).until(() -> told.size() == 1 && workTerms.size() == 1);
            redis.pause();
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(5))
                    .until(() -> lostAt.get() != 0 && workCancelledAt.get() != 0);
            redis.resume();

            Leadership elected = told.get(0);
            assertThat(told.get(1).state()).isEqualTo(State.LOST);
            assertThat(told.get(1).cause()).isInstanceOf(LockLostException.class)
                    .hasMessageContaining("could not renew it before the lease ran out");
            long xLeaseEnd = elected.lease().validUntilNanos();
            assertThat(lostAt.get()).as("LOST told at the end of the lease, not before").isBetween(xLeaseEnd, xLeaseEnd + TOLD_LATE.toNanos());
            long yLeaseEnd = workTerms.get(0).lease().validUntilNanos();
            assertThat(workCancelledAt.get()).as("the work cancelled at the end of the lease, not before")
                    .isBetween(yLeaseEnd, yLeaseEnd + TOLD_LATE.toNanos());

            // Redis awake: both candidates campaigned on and lead again, for higher terms.
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(5))
                    .until(() -> told.size() == 3 && workTerms.size() == 2);
            assertThat(told.get(2).state()).isEqualTo(State.ELECTED);
            assertThat(told.get(2).term()).isGreaterThan(elected.term());
            assertThat(workTerms.get(1).term()).isGreaterThan(workTerms.get(0).term());
            report("fault 2 leadership", "SIGSTOP -> LOST told " + Duration.ofNanos(lostAt.get() - xLeaseEnd).toMillis()
                    + " ms after the lease ran out, work cancelled " + Duration.ofNanos(workCancelledAt.get() - yLeaseEnd).toMillis()
                    + " ms after (TTL " + TTL.toMillis() + " ms); elected again after the resume");
        } finally {
            x.dispose();
            y.dispose();
            redis.resume();
        }
        await().pollInterval(Duration.ofMillis(5)).atMost(Duration.ofSeconds(5))
                .until(() -> !exists(redis, "lock:{x}") && !exists(redis, "lock:{y}"));
        lock.close();
    }
}
