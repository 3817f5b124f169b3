package io.reactivelock.spring;

import io.reactivelock.LockAcquisitionException;
import io.reactivelock.ReactiveLock;
import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the annotated method under a lock of the application's {@link ReactiveLock} bean, through
 * a Spring proxy made by the auto-configuration ({@code reactive-lock.annotations.enabled}, on by
 * default).
 *
 * <pre>{@code
 * @WithLock(name = "'order:' + #order.id", ttl = "30s")
 * public Mono<Receipt> pay(Order order) { ... }
 * }</pre>
 *
 * <h2>Which methods</h2>
 * Methods returning {@code Mono} or {@code Flux}, and Kotlin {@code suspend} functions (which run
 * as a {@code Mono}). The method is called once the lock is held, at each subscription of what
 * the proxy returned, so a re-subscribed result (a retry, a reactive {@code @Scheduled} tick)
 * takes the lock again and calls the method again. Any other return type would need a blocking
 * wait for the lock: the application context refuses to start, naming the method. Like any Spring
 * proxy, the annotation is not applied when the method is called from its own class.
 *
 * <h2>What the caller sees</h2>
 * <ul>
 *   <li>{@code Mono} (and {@code suspend}) methods run as the body of
 *       {@link ReactiveLock#withLock}: released, then the value, emptiness or error; cancel
 *       releases at once; a lost lease cancels the method's {@code Mono} and fails with
 *       {@link io.reactivelock.LockLostException}.
 *   <li>{@code Flux} methods hold the lock from their subscription until the {@code Flux}
 *       terminates (the lock is released before the completion or error reaches the subscriber)
 *       or is cancelled (released at once, in the background). A lost lease cancels the method's
 *       {@code Flux} and fails it with {@link io.reactivelock.LockLostException}.
 *   <li>The lock stays busy for the acquire timeout: with {@link OnBusy#FAIL} the result fails
 *       with {@link LockAcquisitionException}; with {@link OnBusy#SKIP} it completes empty. The
 *       method is not called either way.
 * </ul>
 *
 * <p>The name is a SpEL expression over the arguments, parsed once at start-up (a syntax error
 * fails the start) and evaluated when the method is called: {@code #order} by parameter name (code
 * compiled with {@code -parameters}, or Kotlin), or {@code #p0}/{@code #a0} by position. One that
 * fails or gives {@code null} throws {@link LockNameEvaluationException} at the call, before
 * anything is locked. Durations are like Spring Boot properties ({@code 500ms}, {@code 30s},
 * {@code PT1M}) and may be placeholders ({@code ${jobs.report.ttl}}), resolved at start-up.
 *
 * <h2>Scheduled jobs</h2>
 * On a reactive {@code @Scheduled} method, Spring subscribes to the result at every tick, so every
 * tick takes the lock: with {@code acquireTimeout = "0s", onBusy = SKIP} a tick on one instance is
 * skipped while another instance runs the job. {@link #ttl()} plays ShedLock's
 * {@code lockAtMostFor}: the lease of a holder that died; a live one renews it while the job
 * runs. {@link #lockAtLeastFor()} is ShedLock's too.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface WithLock {

    /**
     * SpEL expression giving the lock name from the arguments, for instance
     * {@code "'order:' + #order.id"}; a constant name is a quoted string, {@code "'nightly-report'"}.
     * A result that is not a {@code String} is converted to one.
     */
    String name();

    /**
     * The lease TTL: how long the lock outlives a holder that stops renewing (crashed, frozen),
     * within the lock's bounds (at least 100 ms, at most its maximum lease time). While the method
     * runs the lease is renewed every third of it.
     */
    String ttl();

    /**
     * How long to wait for a busy lock; {@code "0s"} tries once. Empty (the default): the lock's
     * own acquire timeout ({@code reactive-lock.acquire-timeout}).
     */
    String acquireTimeout() default "";

    /** What the call gives when the lock stays busy for the acquire timeout. Defaults to {@link OnBusy#FAIL}. */
    OnBusy onBusy() default OnBusy.FAIL;

    /**
     * Keeps the lock until this long after the run started (its result subscribed under the lock,
     * so after the lock was acquired), even when the method ends sooner:
     * the result completes (or fails) at once, and the release waits in the background for the
     * rest of the time, the lease renewed meanwhile. A cancelled or lost call is not held on.
     * Empty (the default): released as soon as the method ends. While this instance runs; if it
     * stops meanwhile, the lock expires within {@link #ttl()}; and never past the lock's maximum
     * lease time.
     */
    String lockAtLeastFor() default "";

    /** What a call gives when the lock stays busy for its acquire timeout. */
    enum OnBusy {
        /** Fail with {@link LockAcquisitionException} (reason {@code BUSY}). */
        FAIL,
        /**
         * Complete empty, without calling the method. Only a busy lock is skipped: Redis being
         * unreachable still fails with {@link LockAcquisitionException}.
         */
        SKIP
    }
}
