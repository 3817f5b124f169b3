package io.reactivelock.support;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.support.CriticalSectionHistory.Section;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Mono;

/** The checker's own negative controls: each check reports the violation it exists for. */
class CriticalSectionHistoryTest {

    private static Section section(String lock, long fence, long enter, long exit) {
        return new Section("p", lock, "t" + fence, fence, enter, exit);
    }

    @Test
    void sectionsOneAfterAnotherPassEveryCheck() {
        CriticalSectionHistory history = CriticalSectionHistory.of(List.of(
                section("a", 1, 0, 10), section("a", 2, 10, 20), section("a", 3, 25, 30)));

        assertThat(history.maxOccupancy()).isEqualTo(1);
        assertThat(history.overlaps()).isEmpty();
        assertThat(history.fencingViolations()).isEmpty();
        assertThat(history.lostUpdates(3)).isZero();
    }

    @Test
    void overlappingSectionsOfOneLockAreReported() {
        CriticalSectionHistory history = CriticalSectionHistory.of(List.of(
                section("a", 1, 0, 10), section("a", 2, 5, 20), section("a", 3, 6, 7)));

        assertThat(history.maxOccupancy()).isEqualTo(3);
        assertThat(history.overlaps()).hasSize(3);
    }

    @Test
    void sectionsOfDifferentLocksMayOverlap() {
        CriticalSectionHistory history = CriticalSectionHistory.of(List.of(
                section("a", 1, 0, 10), section("b", 1, 5, 20)));

        assertThat(history.maxOccupancy()).isEqualTo(1);
    }

    @Test
    void aFencingTokenNotAboveThePreviousSectionsIsReported() {
        CriticalSectionHistory history = CriticalSectionHistory.of(List.of(
                section("a", 5, 0, 10), section("a", 5, 10, 20), section("a", 4, 20, 30)));

        assertThat(history.fencingViolations()).hasSize(2);
    }

    @Test
    void aCounterBelowTheNumberOfSectionsMeansLostUpdates() {
        CriticalSectionHistory history = CriticalSectionHistory.of(List.of(
                section("a", 1, 0, 10), section("a", 2, 10, 20)));

        assertThat(history.lostUpdates(1)).isEqualTo(1);
    }

    @Test
    void sectionsSurviveEncodingForAnotherProcess() {
        Section section = new Section("jvm-2", "counter", "abc123", 1700000000000001L, 42, 4242);

        assertThat(Section.decode(section.encode())).isEqualTo(section);
    }

    @Test
    void aFencedResourceRejectsEveryWriteWhoseTokenIsNotAboveTheLastAccepted() {
        FencedResource resource = FencedResource.fenced();

        assertThat(resource.write(10, "first")).isTrue();
        assertThat(resource.write(10, "same token")).isFalse();
        assertThat(resource.write(9, "stale")).isFalse();
        assertThat(resource.write(11, "newer")).isTrue();
        assertThat(resource.value()).isEqualTo("newer");
        assertThat(resource.rejected()).containsExactly("same token", "stale");
    }

    @Test
    void anUnfencedResourceAcceptsAStaleWrite() {
        FencedResource resource = FencedResource.unfenced();

        resource.write(10, "first");

        assertThat(resource.write(9, "stale")).isTrue();
        assertThat(resource.value()).isEqualTo("stale");
    }

    /**
     * A cancel that crosses the body's completion (a timeout firing as the body ends, as
     * LeaderElectionTest's candidates do) is one section, not two overlapping ones.
     */
    @Test
    void aCancelArrivingAfterTheBodyCompletedRecordsTheSectionOnce() {
        CriticalSectionHistory history = new CriticalSectionHistory();
        history.record("p", "a", "t", 1, Mono.empty()).subscribe(new CoreSubscriber<Object>() {
            private Subscription subscription;

            @Override
            public void onSubscribe(Subscription s) {
                subscription = s;
                s.request(1);
            }

            @Override
            public void onNext(Object value) {}

            @Override
            public void onError(Throwable error) {}

            @Override
            public void onComplete() {
                subscription.cancel(); // the cancel that was on its way as the body completed
            }
        });

        assertThat(history.sections()).hasSize(1);
        assertThat(history.overlaps()).isEmpty();
    }
}
