package io.reactivelock.redis;

import io.reactivelock.LockAcquisitionException.Reason;
import io.reactivelock.spi.Lease;
import io.reactivelock.spi.LockCore;
import io.reactivelock.spi.LockStore;
import io.reactivelock.spi.Request;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * A Redis store whose grants the replicas (and, for durable grants, the append-only files)
 * acknowledge ({@link ReplicaAcks}): an attempt whose
 * grant was not acknowledged releases it (by token, before the next attempt can be sent) and is
 * refused with {@link Reason#NOT_REPLICATED}, so the acquisition tries again while its acquire
 * timeout allows, or at once fails when the master reports fewer replicas than are waited for.
 * An attempt still out at the acquire deadline while the grants' connection waits for the
 * replicas ends the acquisition as {@link Reason#NOT_REPLICATED} too. Everything else is the store's.
 */
final class AcknowledgedStore<C> implements LockStore<C> {

    private final LockStore<C> store;
    private final ReplicaAcks acks;
    /** The calls whose attempt is out. */
    private final Set<C> out = ConcurrentHashMap.newKeySet();

    AcknowledgedStore(LockStore<C> store, ReplicaAcks acks) {
        this.store = store;
        this.acks = acks;
    }

    @Override
    public C open(Request request) {
        return store.open(request);
    }

    @Override
    public String newToken() {
        return store.newToken();
    }

    @Override
    public CompletionStage<Reply> acquire(C call, int attempt) {
        out.add(call);
        CompletionStage<Reply> reply;
        try {
            reply = store.acquire(call, attempt);
        } catch (RuntimeException e) {
            out.remove(call);
            throw e;
        }
        return reply.whenComplete((r, e) -> out.remove(call)).exceptionallyCompose(error -> {
            if (!(LockCore.unwrap(error) instanceof ReplicaAcks.NotReplicated e)) {
                return CompletableFuture.failedStage(LockCore.unwrap(error));
            }
            String detail = "the grant was not acknowledged (" + e.getMessage() + ")";
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
    public @Nullable Reply outstanding(C call) {
        return out.contains(call) && acks.waiting() ? Reply.refused(Reason.NOT_REPLICATED,
                "its last attempt was still waiting for the replicas to acknowledge a grant (" + acks.describe() + ")", null) : null;
    }

    @Override
    public String toString() {
        return store.toString();
    }
}
