package io.reactivelock.examples.web;

import io.reactivelock.LeaseTimeExceededException;
import io.reactivelock.LockAcquisitionException;
import io.reactivelock.LockLostException;
import io.reactivelock.examples.ExampleProperties;
import io.reactivelock.examples.sale.SkuAlreadyExistsException;
import io.reactivelock.examples.sale.SkuNotFoundException;
import io.reactivelock.examples.sale.SoldOutException;
import io.reactivelock.examples.sale.StaleLockHolderException;
import java.net.URI;
import java.util.stream.Collectors;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.reactive.result.method.annotation.ResponseEntityExceptionHandler;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.ServerWebInputException;
import reactor.core.publisher.Mono;
import tools.jackson.databind.exc.MismatchedInputException;

/**
 * Every error as RFC 9457 {@code application/problem+json}. The base class covers Spring's own
 * (malformed JSON, unsupported media type, unknown route...); the handlers below cover ours.
 *
 * <p><b>Why 503 + Retry-After, not 409, for a busy lock.</b> {@link LockAcquisitionException}
 * means the server could not get to the request within its acquire timeout (others held the lock
 * the whole time) or could not reach Redis. Nothing is wrong with the request or with the state
 * of the resource: the same request, sent again a little later, is expected to succeed. That is
 * 503's meaning, and {@code Retry-After} tells clients (and proxies) when to come back. 409 says
 * the request conflicts with the resource's current state, which the client would have to change
 * before retrying; clients and libraries do not retry a 409 on their own. The 409s here are real
 * conflicts: sold out, the SKU exists already, a write superseded by a newer lock holder.
 */
@RestControllerAdvice
class ProblemDetailsAdvice extends ResponseEntityExceptionHandler {

    private static final String TYPES = "https://example.org/problems/";

    private final String retryAfterSeconds;

    ProblemDetailsAdvice(ExampleProperties properties) {
        long millis = properties.lock().retryAfter().toMillis();
        this.retryAfterSeconds = Long.toString(Math.max(1, (millis + 999) / 1000));
    }

    @ExceptionHandler
    ResponseEntity<ProblemDetail> invalidRequest(InvalidRequestException e) {
        return ResponseEntity.of(invalid(e.field(), e.getMessage())).build();
    }

    /**
     * A body whose JSON is well formed but has a value of the wrong type for its field (a quantity
     * of {@code 1.5} or {@code "5"}: the application's Jackson settings refuse both) is an invalid
     * request naming that field, like any other rule a field breaks. Other unreadable bodies keep
     * Spring's answer.
     */
    @Override
    protected Mono<ResponseEntity<Object>> handleServerWebInputException(ServerWebInputException e, HttpHeaders headers,
            HttpStatusCode status, ServerWebExchange exchange) {
        if (NestedExceptionUtils.getMostSpecificCause(e) instanceof MismatchedInputException mismatch
                && !mismatch.getPath().isEmpty()) {
            String field = mismatch.getPath().stream()
                    .map(step -> step.getPropertyName() != null ? step.getPropertyName() : Integer.toString(step.getIndex()))
                    .collect(Collectors.joining("."));
            String expected = Integer.class.equals(mismatch.getTargetType()) || int.class.equals(mismatch.getTargetType())
                    ? "a JSON integer" : "of another JSON type";
            return Mono.just(ResponseEntity.badRequest().body(invalid(field, field + " must be " + expected)));
        }
        return super.handleServerWebInputException(e, headers, status, exchange);
    }

    private static ProblemDetail invalid(String field, String detail) {
        ProblemDetail problem = problem(HttpStatus.BAD_REQUEST, "invalid-request", "Invalid request", detail);
        problem.setProperty("field", field);
        return problem;
    }

    @ExceptionHandler
    ResponseEntity<ProblemDetail> skuNotFound(SkuNotFoundException e) {
        return ResponseEntity.of(problem(HttpStatus.NOT_FOUND, "sku-not-found", "Unknown SKU", e.getMessage())).build();
    }

    @ExceptionHandler
    ResponseEntity<ProblemDetail> soldOut(SoldOutException e) {
        return ResponseEntity.of(problem(HttpStatus.CONFLICT, "sold-out", "Sold out", e.getMessage())).build();
    }

    @ExceptionHandler
    ResponseEntity<ProblemDetail> skuExists(SkuAlreadyExistsException e) {
        return ResponseEntity.of(problem(HttpStatus.CONFLICT, "sku-exists", "SKU already exists", e.getMessage())).build();
    }

    @ExceptionHandler
    ResponseEntity<ProblemDetail> staleLockHolder(StaleLockHolderException e) {
        ProblemDetail problem = problem(HttpStatus.CONFLICT, "stale-lock-holder", "Superseded by a newer lock holder",
                e.getMessage() + ". Nothing was written; the request may be retried.");
        problem.setProperty("fencingToken", e.fence());
        problem.setProperty("lastAppliedFencingToken", e.lastFence());
        return ResponseEntity.of(problem).build();
    }

    @ExceptionHandler
    ResponseEntity<ProblemDetail> lockBusy(LockAcquisitionException e) {
        boolean redisFailed = e.getCause() != null;
        ProblemDetail problem = redisFailed
                ? problem(HttpStatus.SERVICE_UNAVAILABLE, "lock-unavailable", "Lock service unavailable",
                        "Could not reach the lock service for '" + e.lockName() + "'. Try again later.")
                : problem(HttpStatus.SERVICE_UNAVAILABLE, "lock-busy", "Too busy",
                        "'" + e.lockName() + "' stayed busy for " + e.waited().toMillis() + " ms. Try again later.");
        problem.setProperty("lock", e.lockName());
        problem.setProperty("attempts", e.attempts());
        return unavailable(problem);
    }

    @ExceptionHandler
    ResponseEntity<ProblemDetail> lockLost(LockLostException e) {
        ProblemDetail problem = problem(HttpStatus.SERVICE_UNAVAILABLE, "lock-lost", "Lock lost",
                "The request lost its lock on '" + e.lockName() + "' while running and was stopped. Writes made "
                        + "after the loss are refused by the database (fencing); check the resource before retrying.");
        problem.setProperty("lock", e.lockName());
        return unavailable(problem);
    }

    @ExceptionHandler
    ResponseEntity<ProblemDetail> leaseTimeExceeded(LeaseTimeExceededException e) {
        ProblemDetail problem = problem(HttpStatus.SERVICE_UNAVAILABLE, "lease-time-exceeded", "Took too long",
                "The request held the lock on '" + e.lockName() + "' for the maximum lease time of "
                        + e.maxLeaseTime().toMillis() + " ms and was stopped.");
        problem.setProperty("lock", e.lockName());
        return unavailable(problem);
    }

    private ResponseEntity<ProblemDetail> unavailable(ProblemDetail problem) {
        return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE)
                .header(HttpHeaders.RETRY_AFTER, retryAfterSeconds)
                .body(problem);
    }

    private static ProblemDetail problem(HttpStatus status, String type, String title, String detail) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(status, detail);
        problem.setType(URI.create(TYPES + type));
        problem.setTitle(title);
        return problem;
    }
}
