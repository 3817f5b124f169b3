package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;
import org.junit.jupiter.api.Test;
import reactor.test.util.RaceTestUtils;

/**
 * The group commit of {@link ReplicaAcks} ({@link GroupCommit}), its interleavings driven by the
 * test: each acknowledgement it sends is a future the test answers, as a {@code WAIT} on the
 * grants' connection would be. A grant whose reply comes in while an acknowledgement is being sent
 * or answered must go with a later one (never with one sent before it came in, which cannot vouch
 * for its write), and never be left without one; one acknowledgement is out at a time.
 */
class GroupCommitTest {

    /** One acknowledgement sent: its batch as the group commit handed it over, a copy taken then, and its answer. */
    private record Sent(List<Integer> batch, List<Integer> whenSent, CompletableFuture<Void> answer) {}

    /** A group commit whose acknowledgements the test answers, and what each settled. */
    private static final class Harness {
        final List<Sent> sent = new CopyOnWriteArrayList<>();
        /** Which acknowledgement (its index in {@link #sent}) settled each item. */
        final Map<Integer, Integer> settledBy = new ConcurrentHashMap<>();
        final AtomicInteger out = new AtomicInteger();
        final AtomicInteger mostOut = new AtomicInteger();
        /** Called with each item as its acknowledgement settles it, before the group commit hears the answer. */
        volatile IntConsumer onSettled = item -> { };
        /** Called with each batch as it is sent, before the send returns. */
        volatile IntConsumer onSend = index -> { };
        final GroupCommit<Integer> commit = new GroupCommit<>(batch -> {
            mostOut.accumulateAndGet(out.incrementAndGet(), Math::max);
            Sent s = new Sent(batch, List.copyOf(batch), new CompletableFuture<>());
            sent.add(s);
            int index = sent.size() - 1;
            onSend.accept(index);
            // As ReplicaAcks settles a batch (completes its grants) before its stage completes.
            return s.answer.thenRun(() -> {
                out.decrementAndGet();
                for (int item : s.batch) {
                    settledBy.merge(item, index, (a, b) -> -1);
                    onSettled.accept(item);
                }
            });
        });

        /** Answers every acknowledgement out, and those its answers send, until none is out. */
        void answerAll() {
            for (int i = 0; i < sent.size(); i++) {
                sent.get(i).answer.complete(null);
            }
        }

        /** Every item of {@code items} settled once, by an acknowledgement whose batch was fixed when it was sent. */
        void assertSettledOnce(List<Integer> items) {
            assertThat(settledBy).as("which acknowledgement settled each item (-1: more than one)").containsOnlyKeys(items)
                    .doesNotContainValue(-1);
            sent.forEach(s -> assertThat(s.batch).as("a batch settled against what it was when its acknowledgement was sent")
                    .isEqualTo(s.whenSent));
            assertThat(commit.busy()).as("busy once every acknowledgement answered").isFalse();
            assertThat(mostOut.get()).as("acknowledgements out at once").isEqualTo(1);
        }
    }

    @Test
    void aGrantWhoseReplyComesInWhileAnAcknowledgementIsBeingSentGoesWithTheNextOne() {
        Harness h = new Harness();
        h.onSend = index -> {
            if (index == 0) {
                h.commit.add(2);
            }
        };
        h.commit.add(1);
        assertThat(h.sent).hasSize(1);
        assertThat(h.sent.get(0).whenSent).containsExactly(1);
        assertThat(h.commit.busy()).isTrue();

        h.sent.get(0).answer.complete(null);
        assertThat(h.settledBy).as("settled by the first acknowledgement").containsOnlyKeys(1);
        assertThat(h.sent).as("a second acknowledgement, sent once the first answered").hasSize(2);
        assertThat(h.sent.get(1).whenSent).containsExactly(2);

        h.answerAll();
        h.assertSettledOnce(List.of(1, 2));
        assertThat(h.settledBy).containsEntry(2, 1);
    }

    @Test
    void aGrantWhoseReplyComesInWhileAnAcknowledgementIsBeingAnsweredGetsAnAcknowledgementOfItsOwn() {
        Harness h = new Harness();
        // Item 1's settling (its body starting, say) makes another grant whose reply comes in at once.
        h.onSettled = item -> {
            if (item == 1) {
                h.commit.add(2);
            }
        };
        h.commit.add(1);
        h.sent.get(0).answer.complete(null);
        assertThat(h.sent).as("an acknowledgement for the grant that came in during the answer").hasSize(2);
        assertThat(h.sent.get(1).whenSent).containsExactly(2);
        assertThat(h.settledBy).as("not settled by the answer it came in during").doesNotContainKey(2);

        h.answerAll();
        h.assertSettledOnce(List.of(1, 2));
    }

    @Test
    void grantsWhoseRepliesComeInWhileOneIsOutShareTheNextAcknowledgement() {
        Harness h = new Harness();
        h.commit.add(1);
        for (int i = 2; i <= 9; i++) {
            h.commit.add(i);
        }
        assertThat(h.sent).as("one out, the others waiting").hasSize(1);
        h.sent.get(0).answer.complete(null);
        assertThat(h.sent).hasSize(2);
        assertThat(h.sent.get(1).whenSent).containsExactly(2, 3, 4, 5, 6, 7, 8, 9);
        h.answerAll();
        h.assertSettledOnce(List.of(1, 2, 3, 4, 5, 6, 7, 8, 9));
    }

    /**
     * A grant's reply (on one thread) races the answer to the acknowledgement out (on another), each
     * round started together by {@link RaceTestUtils#race}: wherever the reply lands in the handling
     * of the answer, it is settled by a later acknowledgement, once.
     */
    @Test
    void aGrantWhoseReplyRacesTheAnswerToTheAcknowledgementOutIsSettledByALaterOneOnce() {
        int rounds = 2_000;
        for (int round = 0; round < rounds; round++) {
            Harness h = new Harness();
            h.commit.add(1);
            Sent first = h.sent.get(0);
            RaceTestUtils.race(() -> h.commit.add(2), () -> first.answer.complete(null));
            h.answerAll();
            int r = round;
            assertThat(h.settledBy).as("round %d: item 2 not settled by the acknowledgement out before it came in", r)
                    .containsEntry(1, 0).doesNotContainEntry(2, 0);
            h.assertSettledOnce(new ArrayList<>(List.of(1, 2)));
        }
    }

    /** Two grant replies race each other and the answer: at most one acknowledgement out, each grant settled once. */
    @Test
    void twoGrantsRacingTheAnswerNeverHaveTwoAcknowledgementsOut() {
        int rounds = 1_000;
        for (int round = 0; round < rounds; round++) {
            Harness h = new Harness();
            h.commit.add(1);
            Sent first = h.sent.get(0);
            RaceTestUtils.race(() -> h.commit.add(2), () -> h.commit.add(3), () -> first.answer.complete(null));
            h.answerAll();
            h.assertSettledOnce(List.of(1, 2, 3));
        }
    }
}
