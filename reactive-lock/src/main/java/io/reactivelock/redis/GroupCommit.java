package io.reactivelock.redis;

import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * The group commit of {@link ReplicaAcks}: one acknowledgement ({@code WAIT}, {@code WAITAOF}) out
 * at a time, sent for every item added while none was out, and the next one sent once it answered.
 * An item goes in the first batch sent after it was added, never in one sent before (a batch is
 * taken whole when it is sent), and is never left without one: the flag is cleared before the queue
 * is looked at again, so an item added while an answer is being handled is either taken by that
 * look or finds the flag clear and sends its own.
 */
final class GroupCommit<T> {

    private final Queue<T> next = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean out = new AtomicBoolean();
    private final Function<List<T>, CompletionStage<?>> send;

    /** {@code send} sends one acknowledgement for its batch and settles it; its stage completes when the batch is settled. */
    GroupCommit(Function<List<T>, CompletionStage<?>> send) {
        this.send = send;
    }

    /** Queues {@code item} for the next acknowledgement, and sends that one unless one is out. */
    void add(T item) {
        next.add(item);
        sendNext();
    }

    /** Whether an acknowledgement is out or items wait for one. */
    boolean busy() {
        return out.get() || !next.isEmpty();
    }

    private void sendNext() {
        while (!next.isEmpty() && out.compareAndSet(false, true)) {
            List<T> batch = new ArrayList<>();
            for (T item; (item = next.poll()) != null; ) {
                batch.add(item);
            }
            if (batch.isEmpty()) {
                out.set(false);
                continue;
            }
            send.apply(batch).whenComplete((settled, error) -> {
                out.set(false);
                sendNext();
            });
            return;
        }
    }
}
