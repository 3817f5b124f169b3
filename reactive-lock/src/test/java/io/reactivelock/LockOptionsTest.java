package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.scheduler.Schedulers;

class LockOptionsTest {

    @Test
    void defaultsAreTheDocumentedOnes() {
        LockOptions o = LockOptions.defaults();
        assertThat(o.keyPrefix()).isEqualTo("lock");
        assertThat(o.acquireTimeout()).isEqualTo(Duration.ofSeconds(10));
        assertThat(o.minBackoff()).isEqualTo(Duration.ofMillis(5));
        assertThat(o.maxBackoff()).isEqualTo(Duration.ofMillis(200));
        assertThat(o.jitter()).isEqualTo(0.5);
        assertThat(o.renewalInterval()).isNull();
        assertThat(o.renewalIntervalFor(Duration.ofSeconds(30))).isEqualTo(Duration.ofSeconds(10));
        assertThat(o.maxLeaseTime()).isEqualTo(Duration.ofMinutes(10));
        assertThat(o.commandTimeout()).isEqualTo(Duration.ofSeconds(2));
        assertThat(o.closeTimeout()).isEqualTo(Duration.ofSeconds(5));
        assertThat(o.scheduler()).isSameAs(Schedulers.parallel());
    }

    @Test
    void theWaiterLeaseIsFiveBackoffStepsButNeverUnderOneSecond() {
        assertThat(LockOptions.defaults().waiterLease()).isEqualTo(Duration.ofSeconds(1));
        assertThat(LockOptions.builder().backoff(Duration.ofMillis(1), Duration.ofMillis(50)).build().waiterLease())
                .isEqualTo(Duration.ofSeconds(1));
        assertThat(LockOptions.builder().backoff(Duration.ofMillis(1), Duration.ofSeconds(1)).build().waiterLease())
                .isEqualTo(Duration.ofSeconds(5));
    }

    @Test
    void toBuilderKeepsEveryValue() {
        LockOptions o = LockOptions.builder().keyPrefix("app").acquireTimeout(Duration.ZERO)
                .backoff(Duration.ofMillis(1), Duration.ofMillis(2)).jitter(0).renewalInterval(Duration.ofSeconds(1))
                .maxLeaseTime(Duration.ofMinutes(1)).commandTimeout(Duration.ofMillis(300))
                .closeTimeout(Duration.ofMillis(400)).build();
        assertThat(o.toBuilder().build()).usingRecursiveComparison().isEqualTo(o);
    }

    @Test
    void nullsAreRejectedWithTheirName() {
        assertThatThrownBy(() -> LockOptions.builder().keyPrefix(null)).isInstanceOf(NullPointerException.class)
                .hasMessage("keyPrefix");
        assertThatThrownBy(() -> LockOptions.builder().acquireTimeout(null)).hasMessage("acquireTimeout");
        assertThatThrownBy(() -> LockOptions.builder().backoff(null, Duration.ofSeconds(1))).hasMessage("minBackoff");
        assertThatThrownBy(() -> LockOptions.builder().backoff(Duration.ofSeconds(1), null)).hasMessage("maxBackoff");
        assertThatThrownBy(() -> LockOptions.builder().maxLeaseTime(null)).hasMessage("maxLeaseTime");
        assertThatThrownBy(() -> LockOptions.builder().commandTimeout(null)).hasMessage("commandTimeout");
        assertThatThrownBy(() -> LockOptions.builder().closeTimeout(null)).hasMessage("closeTimeout");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "a{b", "a}b", "01234567890123456789012345678901234567890123456789012345678901234"})
    void badKeyPrefixesAreRejected(String prefix) {
        assertThatThrownBy(() -> LockOptions.builder().keyPrefix(prefix))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("keyPrefix");
    }

    @Test
    void negativeAndZeroDurationsAreRejectedWhereTheyMakeNoSense() {
        Duration negative = Duration.ofMillis(-1);
        assertThatThrownBy(() -> LockOptions.builder().acquireTimeout(negative))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("acquireTimeout");
        assertThatThrownBy(() -> LockOptions.builder().backoff(Duration.ZERO, Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("minBackoff");
        assertThatThrownBy(() -> LockOptions.builder().backoff(Duration.ofSeconds(1), negative))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxBackoff");
        assertThatThrownBy(() -> LockOptions.builder().renewalInterval(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("renewalInterval");
        assertThatThrownBy(() -> LockOptions.builder().maxLeaseTime(negative))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxLeaseTime");
        assertThatThrownBy(() -> LockOptions.builder().commandTimeout(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("commandTimeout");
        assertThatThrownBy(() -> LockOptions.builder().closeTimeout(negative))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("closeTimeout");
        assertThatThrownBy(() -> LockOptions.builder().closeTimeout(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("closeTimeout");
    }

    @Test
    void backoffBoundsMustBeOrdered() {
        assertThatThrownBy(() -> LockOptions.builder().backoff(Duration.ofSeconds(2), Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("must not exceed");
    }

    @ParameterizedTest
    @ValueSource(doubles = {-0.1, 1.1, Double.NaN})
    void jitterOutsideZeroToOneIsRejected(double jitter) {
        assertThatThrownBy(() -> LockOptions.builder().jitter(jitter))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("[0, 1]");
    }

    @Test
    void zeroAcquireTimeoutAndNullRenewalIntervalAreAccepted() {
        LockOptions o = LockOptions.builder().acquireTimeout(Duration.ZERO).renewalInterval(null).build();
        assertThat(o.acquireTimeout()).isZero();
        assertThat(o.renewalInterval()).isNull();
    }
}
