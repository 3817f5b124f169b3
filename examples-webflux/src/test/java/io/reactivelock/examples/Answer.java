package io.reactivelock.examples;

import org.jspecify.annotations.Nullable;

/** One HTTP answer: its status, its {@code Retry-After} header, its body. */
record Answer(int status, @Nullable String retryAfter, String body) {}
