package io.reactivelock.spring;

import io.reactivelock.inspect.LockInspector;
import org.springframework.boot.actuate.endpoint.OperationResponseBody;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import reactor.core.publisher.Mono;

/**
 * {@link LocksEndpoint} with {@code DELETE /actuator/locks/{name}?holder=...}, which force-releases
 * a lock still held by the holder shown (see {@link LockInspector#forceRelease}). The
 * auto-configuration uses it only when {@code reactive-lock.inspector.force-release-enabled=true}.
 */
@Endpoint(id = "locks")
public class ForceReleasingLocksEndpoint extends LocksEndpoint {

    private final LockInspector inspector;

    /** {@code inspector} must have force-release enabled. */
    public ForceReleasingLocksEndpoint(LockInspector inspector) {
        super(inspector);
        if (!inspector.forceReleaseEnabled()) {
            throw new IllegalArgumentException("the inspector of a ForceReleasingLocksEndpoint must have force-release enabled");
        }
        this.inspector = inspector;
    }

    /** Deletes lock {@code name} if {@code holder} still holds it; answers whether it did. */
    @DeleteOperation
    public Mono<ReleaseDescriptor> forceRelease(@Selector(match = Selector.Match.ALL_REMAINING) String[] name, String holder) {
        String lock = name(name);
        return checked(() -> inspector.forceRelease(lock, holder)).map(released -> new ReleaseDescriptor(lock, holder, released));
    }

    /**
     * The answer of a force-release.
     *
     * @param name the lock name
     * @param holder the holder asked for
     * @param released whether the lock was deleted; {@code false} when free or held by someone else
     */
    public record ReleaseDescriptor(String name, String holder, boolean released) implements OperationResponseBody {}
}
