package io.reactivelock.redis;

import io.reactivelock.LockAcquisitionException.Reason;
import io.reactivelock.spi.Lease;
import io.reactivelock.spi.LockCore;
import io.reactivelock.spi.LockStore;
import io.reactivelock.spi.Request;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * A Redis store whose grants the replicas acknowledge ({@link ReplicaAcks}): an attempt whose
 * grant was not acknowledged releases it (by token, before the next attempt can be sent) and is
 * refused with {@link Reason#NOT_REPLICATED}, so the acquisition tries again while its acquire
 * timeout allows, or at once fails when the master reports fewer replicas than are waited for.
 * Everything else is the store's.
 */
final class AcknowledgedStore<C> implements LockStore<C> {

    private final LockStore<C> store;

    AcknowledgedStore(LockStore<C> store) {
        this.store = store;
    }

    @Override
    public C open(Request request) {
        return store.open(request);
    }

    @Override
    public CompletionStage<Reply> acquire(C call, int attempt) {
        return store.acquire(call, attempt).exceptionallyCompose(error -> {
            if (!(LockCore.unwrap(error) instanceof ReplicaAcks.NotReplicated e)) {
                return CompletableFuture.failedStage(LockCore.unwrap(error));
            }
            String detail = "the replicas did not acknowledge the grant (" + e.getMessage() + ")";
            Reply refused = e.gone ? Reply.refusedAtOnce(Reason.NOT_REPLICATED, detail, e)
                    : Reply.refused(Reason.NOT_REPLICATED, detail, e);
            return store.releaseAbandoned(call).handle((released, releaseError) -> refused);
        });
    }

    @Override
    public Mono<Void> renew(C call, Lease lease) {
        return store.renew(call, lease);
    }

    @Override
    public Mono<Boolean> release(C call) {
        return store.release(call);
    }

    @Override
    public CompletionStage<?> releaseAbandoned(C call) {
        return store.releaseAbandoned(call);
    }

    @Override
    public boolean isTransient(Throwable error) {
        return store.isTransient(error);
    }

    @Override
    public @Nullable Duration pause(C call, int attempts) {
        return store.pause(call, attempts);
    }

    @Override
    public @Nullable Duration replyTimeout(Duration commandTimeout) {
        return store.replyTimeout(commandTimeout);
    }

    @Override
    public void checkTtl(Duration ttl) {
        store.checkTtl(ttl);
    }

    @Override
    public void stopWaiting(C call) {
        store.stopWaiting(call);
    }

    @Override
    public String toString() {
        return store.toString();
    }
}
