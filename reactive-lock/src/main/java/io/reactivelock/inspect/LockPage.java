package io.reactivelock.inspect;

import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * One page of the names held, from {@link LockInspector#page}.
 *
 * @param names the names of this page, each once, decoded from their keys; possibly empty even when
 *     more pages follow (one {@code SCAN} step may find no key of a held name)
 * @param cursor what to pass to {@link LockInspector#page} for the next page; {@code null} on the
 *     last page
 */
public record LockPage(List<String> names, @Nullable String cursor) {

    public LockPage {
        names = List.copyOf(names);
    }

    /** Whether this is the last page. */
    public boolean last() {
        return cursor == null;
    }
}
