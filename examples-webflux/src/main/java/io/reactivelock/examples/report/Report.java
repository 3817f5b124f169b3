package io.reactivelock.examples.report;

import java.time.Instant;

/**
 * The result of the expensive computation.
 *
 * @param id which report
 * @param value its content
 * @param computation the number of the computation that produced it (1 for the first one this app ran)
 * @param computedAt when it was computed
 */
public record Report(String id, String value, long computation, Instant computedAt) {}
