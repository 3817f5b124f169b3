package io.reactivelock.spring;

import org.springframework.boot.context.properties.ConfigurationProperties;

/** The {@code reactive-lock.inspector.*} properties: the auto-configured {@code LockInspector} and {@code /actuator/locks}. */
@ConfigurationProperties("reactive-lock.inspector")
public class InspectorProperties {

    /**
     * Whether the inspector may force-release a lock, and /actuator/locks has its DELETE operation
     * to do so. Off: the endpoint only reads.
     */
    private boolean forceReleaseEnabled;

    public boolean isForceReleaseEnabled() {
        return forceReleaseEnabled;
    }

    public void setForceReleaseEnabled(boolean forceReleaseEnabled) {
        this.forceReleaseEnabled = forceReleaseEnabled;
    }
}
