package io.reactivelock.inspect;

import io.reactivelock.LockListener;
import io.reactivelock.LockLostException;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Shows what the locks of a client look like in its store, for operators: which names are held
 * ({@link #page}, {@link #names}) as a lock, a semaphore or a read-write lock, and, for one name
 * ({@link #inspect}), the holder, what is left of its lease, the fencing token and the fair line,
 * the semaphore's holders and permits, and the read-write lock's writer, readers and waiting
 * writers. Get one from the client, which it shares its connection with:
 *
 * <pre>{@code
 * LockInspector inspector = redis.inspector();
 * inspector.names().flatMap(inspector::inspect).subscribe(state -> log.info("{}", state));
 * }</pre>
 *
 * <p>It only reads and never blocks; on Redis, listing uses {@code SCAN} with a bounded
 * {@code COUNT}, never {@code KEYS}, on every master of a Cluster. Holders' tokens are shown
 * abbreviated to their first 8 characters: the whole token is what releases the lock. The one
 * exception is {@link #forceRelease}, an administrative operation that must be enabled explicitly
 * ({@link #withForceReleaseEnabled()}).
 */
public interface LockInspector {

    /** How many waiters of a fair line {@link #inspect} lists one by one. */
    int MAX_WAITERS_LISTED = 100;
    /** The largest {@code count} of {@link #page}. */
    int MAX_PAGE_SIZE = 1000;
    /** The {@code count} with which {@link #names} pages. */
    int DEFAULT_PAGE_SIZE = 250;

    /**
     * One page of the names held now ({@link LockState#inUse()}: as a lock, permits of a semaphore,
     * or a read-write lock by a writer or readers): one {@code SCAN} step of {@code count} keys (a
     * hint to Redis, at most {@value #MAX_PAGE_SIZE}), on one master of a Cluster. Pass the page's
     * {@link LockPage#cursor() cursor} back for the next page, {@code null} for the first one. As
     * with {@code SCAN}, a name held from the first page to the last is listed, a page may be
     * empty before the last one, and a name may be listed on two pages: once per page at most,
     * but a name held by two primitives has two keys, which may come in different steps.
     *
     * @throws IllegalArgumentException for a {@code count} out of range or a cursor this kind of
     *     inspector did not return
     */
    Mono<LockPage> page(@Nullable String cursor, int count);

    /**
     * The names held, page after page of {@value #DEFAULT_PAGE_SIZE}, as requested; each name once
     * (the flux keeps the names it emitted until it ends).
     */
    default Flux<String> names() {
        return page(null, DEFAULT_PAGE_SIZE)
                .expand(page -> page.last() ? Mono.empty() : page(page.cursor(), DEFAULT_PAGE_SIZE))
                .concatMapIterable(LockPage::names)
                .distinct();
    }

    /**
     * What the store holds for {@code name} now: its lock (free or held, the holder abbreviated, the
     * lease left, the last fencing token, how many wait: the fair line, or a non-fair lock's
     * waiters registered to be woken, and the fair line itself), and, where the name is in use as
     * one, its semaphore's live holders and its read-write lock's writer, readers and waiting
     * writers.
     *
     * @throws IllegalArgumentException for a name {@code withLock} would refuse
     */
    Mono<LockState> inspect(String name);

    /**
     * Administrative: deletes lock {@code name} if its holder's token still starts with
     * {@code holder} (the 8 characters {@link #inspect} showed), so that a newer holder is not
     * removed (unless its token starts with the same 8 characters: one chance in 2<sup>32</sup>).
     * Emits whether it deleted the lock. The holder is not told at once: it finds the lock gone at
     * its next renewal ({@link LockLostException}) and its body may run until then. Waiters get the
     * lock at their next attempt.
     *
     * <p>A forced release is logged and reported to the client's listener as
     * {@link LockListener#lost lost}: the holder's lease ended against its will. The holder's own
     * process reports its loss too, when it notices. On Redis it needs {@code EVAL} (with
     * {@code GET} and {@code DEL} inside), beyond the read-only commands.
     *
     * @throws IllegalStateException unless this inspector came from {@link #withForceReleaseEnabled()}
     */
    Mono<Boolean> forceRelease(String name, String holder);

    /** This inspector with {@link #forceRelease} allowed; this one stays read-only. */
    LockInspector withForceReleaseEnabled();

    /** Whether {@link #forceRelease} is allowed. */
    boolean forceReleaseEnabled();
}
