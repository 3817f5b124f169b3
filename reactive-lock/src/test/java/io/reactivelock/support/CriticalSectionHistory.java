package io.reactivelock.support;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import reactor.core.publisher.Mono;

/**
 * The history of critical sections run under a lock, and the checks a lock must pass on it:
 * never more than one section inside at once, fencing tokens rising in the order sections entered,
 * and (with a counter the sections increment non-atomically) no lost update.
 *
 * <p>Times are {@link System#nanoTime()}, which on Linux is {@code CLOCK_MONOTONIC} and therefore
 * comparable between JVMs on the same host: sections recorded by several processes (see
 * {@link Section#encode()}) can be checked together.
 */
public final class CriticalSectionHistory {

    /** One critical section: who ran it, under which lock and tokens, and when it entered and left. */
    public record Section(String process, String lock, String token, long fencingToken, long enterNanos, long exitNanos) {

        public Section {
            Objects.requireNonNull(process, "process");
            Objects.requireNonNull(lock, "lock");
            Objects.requireNonNull(token, "token");
        }

        /** One line without spaces in the fields: {@code process lock token fence enter exit}. */
        public String encode() {
            return String.join(" ", process, lock, token, Long.toString(fencingToken),
                    Long.toString(enterNanos), Long.toString(exitNanos));
        }

        /** The section that {@link #encode()} wrote. */
        public static Section decode(String line) {
            String[] f = line.split(" ");
            return new Section(f[0], f[1], f[2], Long.parseLong(f[3]), Long.parseLong(f[4]), Long.parseLong(f[5]));
        }

        boolean overlaps(Section other) {
            return enterNanos < other.exitNanos && other.enterNanos < exitNanos;
        }
    }

    private final ConcurrentLinkedQueue<Section> sections = new ConcurrentLinkedQueue<>();

    /** A history of the given sections, e.g. decoded from what other processes recorded. */
    public static CriticalSectionHistory of(Collection<Section> sections) {
        CriticalSectionHistory history = new CriticalSectionHistory();
        history.sections.addAll(sections);
        return history;
    }

    /** Adds a finished section. */
    public void add(Section section) {
        sections.add(section);
    }

    /**
     * Runs {@code body} as a recorded section: it enters on subscription and exits when the body
     * terminates or is cancelled, whichever comes first (a cancel can cross the body's completion),
     * before the lock sees the outcome (so before the release).
     */
    public <T> Mono<T> record(String process, String lock, String token, long fencingToken, Mono<T> body) {
        return Mono.defer(() -> {
            long enter = System.nanoTime();
            AtomicBoolean exited = new AtomicBoolean();
            Runnable exit = () -> {
                if (exited.compareAndSet(false, true)) {
                    add(new Section(process, lock, token, fencingToken, enter, System.nanoTime()));
                }
            };
            return body.doOnTerminate(exit).doOnCancel(exit);
        });
    }

    /** The sections recorded so far, in entry order. */
    public List<Section> sections() {
        List<Section> inOrder = new ArrayList<>(sections);
        inOrder.sort(Comparator.comparingLong(Section::enterNanos));
        return inOrder;
    }

    /** The most sections of one lock that were ever inside at the same instant (1 when exclusion held). */
    public int maxOccupancy() {
        record Event(long at, int delta) {}
        int max = 0;
        for (List<Section> ofLock : byLock()) {
            List<Event> events = new ArrayList<>();
            for (Section s : ofLock) {
                events.add(new Event(s.enterNanos(), 1));
                events.add(new Event(s.exitNanos(), -1));
            }
            // At equal instants exits come first: leaving and entering at once is not an overlap.
            events.sort(Comparator.comparingLong(Event::at).thenComparingInt(Event::delta));
            int inside = 0;
            for (Event e : events) {
                inside += e.delta();
                max = Math.max(max, inside);
            }
        }
        return max;
    }

    /** Pairs of sections of one lock that were inside at the same time, for failure messages. */
    public List<String> overlaps() {
        List<String> found = new ArrayList<>();
        for (List<Section> ofLock : byLock()) {
            for (int i = 0; i + 1 < ofLock.size(); i++) {
                for (int j = i + 1; j < ofLock.size() && ofLock.get(j).enterNanos() < ofLock.get(i).exitNanos(); j++) {
                    found.add(ofLock.get(i) + " overlaps " + ofLock.get(j));
                }
            }
        }
        return found;
    }

    /** Sections recorded minus what the counter they each incremented once ended at. */
    public long lostUpdates(long finalCounterValue) {
        return sections.size() - finalCounterValue;
    }

    /** Sections of one lock whose fencing token is not above the one of the section that entered before them. */
    public List<String> fencingViolations() {
        List<String> found = new ArrayList<>();
        for (List<Section> ofLock : byLock()) {
            for (int i = 1; i < ofLock.size(); i++) {
                if (ofLock.get(i).fencingToken() <= ofLock.get(i - 1).fencingToken()) {
                    found.add(ofLock.get(i) + " entered after " + ofLock.get(i - 1));
                }
            }
        }
        return found;
    }

    private Collection<List<Section>> byLock() {
        return sections().stream()
                .collect(Collectors.groupingBy(Section::lock, LinkedHashMap::new,
                        Collectors.toList()))
                .values();
    }
}
