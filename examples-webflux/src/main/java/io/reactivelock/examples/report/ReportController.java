package io.reactivelock.examples.report;

import io.reactivelock.examples.web.Requests;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

@RestController
class ReportController {

    private final ReportService reports;

    ReportController(ReportService reports) {
        this.reports = reports;
    }

    /** The report, from the cache, or computed once however many ask at the same moment. */
    @GetMapping("/reports/{id}")
    Mono<Report> report(@PathVariable String id) {
        return reports.report(Requests.checkId("id", id));
    }

    /** Computes the report again: 200 with the new report; 503 lock-busy if it is being computed right now. */
    @PostMapping("/reports/{id}/refresh")
    Mono<Report> refresh(@PathVariable String id) {
        return reports.refresh(Requests.checkId("id", id));
    }
}
