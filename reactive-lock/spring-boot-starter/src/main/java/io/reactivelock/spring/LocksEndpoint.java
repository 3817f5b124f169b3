package io.reactivelock.spring;

import io.reactivelock.inspect.LockInspector;
import io.reactivelock.inspect.LockPage;
import io.reactivelock.inspect.LockState;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.OperationResponseBody;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * {@code /actuator/locks}: the names held now (as locks, semaphores or read-write locks), a page at
 * a time ({@code ?cursor=...&count=...}), and {@code /actuator/locks/{name}}: one name, held or
 * free, read through a {@link LockInspector}.
 * Exposed like any actuator endpoint ({@code management.endpoints.web.exposure.include=locks}).
 */
@Endpoint(id = "locks")
public class LocksEndpoint {

    /** Locks per page when the request does not say. */
    public static final int DEFAULT_COUNT = 100;

    private final LockInspector inspector;

    public LocksEndpoint(LockInspector inspector) {
        this.inspector = Objects.requireNonNull(inspector, "inspector");
    }

    /** One page of the locks held, each with its state; {@code cursor} asks for the next page. */
    @ReadOperation
    public Mono<LocksDescriptor> locks(@Nullable String cursor, @Nullable Integer count) {
        Mono<LockPage> page = checked(() -> inspector.page(cursor, count == null ? DEFAULT_COUNT : count));
        return page.flatMap(found -> Flux.fromIterable(found.names())
                .flatMapSequential(inspector::inspect)
                .map(LockDescriptor::of)
                .collectList()
                .map(locks -> new LocksDescriptor(locks, found.cursor())));
    }

    /** One lock, held or free. */
    @ReadOperation
    public Mono<LockDescriptor> lock(@Selector(match = Selector.Match.ALL_REMAINING) String[] name) {
        return checked(() -> inspector.inspect(name(name))).map(LockDescriptor::of);
    }

    /** The lock name of a path whose segments are {@code segments}: a name may contain {@code /}. */
    static String name(String[] segments) {
        return String.join("/", segments);
    }

    /** Runs {@code call}, turning a rejected argument into a 400 answer. */
    static <T> Mono<T> checked(Supplier<Mono<T>> call) {
        try {
            return call.get();
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new InvalidEndpointRequestException(String.valueOf(e.getMessage()), String.valueOf(e.getMessage()));
        }
    }

    /**
     * A page of locks.
     *
     * @param locks the locks of this page
     * @param cursor the {@code cursor} parameter of the next page; {@code null} on the last page
     */
    public record LocksDescriptor(List<LockDescriptor> locks, @Nullable String cursor) implements OperationResponseBody {}

    /**
     * One name, as {@link LockState} has it, with durations in milliseconds.
     *
     * @param name the name
     * @param held whether someone holds its lock
     * @param holder the first 8 characters of the lock holder's token; {@code null} when free
     * @param ttlMillis what is left of the lease; {@code null} when free
     * @param fencingToken the last fencing token issued for the lock; {@code null} once its record expired
     * @param waiting how many wait for the lock
     * @param waiters the first 100 of its fair line, first in line first
     * @param semaphore the name's semaphore while permits of it are held; {@code null} otherwise
     * @param readWrite the name's read-write lock while held or awaited by a writer; {@code null} otherwise
     */
    public record LockDescriptor(String name, boolean held, @Nullable String holder, @Nullable Long ttlMillis,
            @Nullable Long fencingToken, long waiting, List<WaiterDescriptor> waiters,
            @Nullable SemaphoreDescriptor semaphore, @Nullable ReadWriteDescriptor readWrite) implements OperationResponseBody {

        static LockDescriptor of(LockState state) {
            LockState.Semaphore semaphore = state.semaphore();
            LockState.ReadWrite readWrite = state.readWrite();
            return new LockDescriptor(state.name(), state.held(), state.holder(), millis(state.ttl()),
                    state.fencingToken(), state.waiting(),
                    state.waiters().stream().map(w -> new WaiterDescriptor(w.token(), w.leaseLeft().toMillis())).toList(),
                    semaphore == null ? null : new SemaphoreDescriptor(semaphore.permits(), semaphore.holders().stream()
                            .map(h -> new PermitHolderDescriptor(h.token(), h.permits(), h.leaseLeft().toMillis())).toList()),
                    readWrite == null ? null : new ReadWriteDescriptor(readWrite.writer(), millis(readWrite.writerTtl()),
                            readWrite.fencingToken(), readWrite.readers(), readWrite.writersWaiting()));
        }

        private static @Nullable Long millis(@Nullable Duration duration) {
            return duration == null ? null : duration.toMillis();
        }
    }

    /**
     * A waiter in a fair line.
     *
     * @param token the first 8 characters of its token
     * @param leaseLeftMillis how long it keeps its place without calling Redis again
     */
    public record WaiterDescriptor(String token, long leaseLeftMillis) {}

    /**
     * A semaphore, as {@link LockState.Semaphore} has it.
     *
     * @param permits the permits its live holders hold
     * @param holders those holders, the one whose lease ends first first
     */
    public record SemaphoreDescriptor(long permits, List<PermitHolderDescriptor> holders) {}

    /**
     * A live holder of semaphore permits.
     *
     * @param token the first 8 characters of its token
     * @param permits how many permits it holds
     * @param leaseLeftMillis what is left of its lease
     */
    public record PermitHolderDescriptor(String token, int permits, long leaseLeftMillis) {}

    /**
     * A read-write lock, as {@link LockState.ReadWrite} has it.
     *
     * @param writer the first 8 characters of the writer's token; {@code null} while no writer holds it
     * @param writerTtlMillis what is left of the writer's lease; {@code null} while no writer holds it
     * @param fencingToken the last fencing token issued to a writer; {@code null} once its record expired
     * @param readers how many readers hold it
     * @param writersWaiting how many writers wait for it
     */
    public record ReadWriteDescriptor(@Nullable String writer, @Nullable Long writerTtlMillis, @Nullable Long fencingToken,
            long readers, long writersWaiting) {}
}
