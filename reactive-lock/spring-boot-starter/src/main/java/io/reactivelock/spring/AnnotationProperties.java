package io.reactivelock.spring;

import org.springframework.boot.context.properties.ConfigurationProperties;

/** The {@code reactive-lock.annotations.*} properties: the {@link WithLock} support. */
@ConfigurationProperties("reactive-lock.annotations")
public class AnnotationProperties {

    /**
     * Whether {@link WithLock} methods run under their lock. Off: they run unlocked, as if not
     * annotated, and are not checked at start-up.
     */
    private boolean enabled = true;

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }
}
