package io.reactivelock.examples;

import io.r2dbc.spi.ConnectionFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.transaction.ReactiveTransactionManager;
import org.springframework.transaction.reactive.TransactionalOperator;

/**
 * The database side: Spring Boot makes the {@link ConnectionFactory} from {@code spring.r2dbc.url},
 * its transaction manager, and runs {@code schema.sql}; this adds the plain {@link DatabaseClient}
 * (no Spring Data repositories) and a {@link TransactionalOperator}.
 */
@Configuration(proxyBeanMethods = false)
class DatabaseConfiguration {

    @Bean
    DatabaseClient databaseClient(ConnectionFactory connectionFactory) {
        return DatabaseClient.create(connectionFactory);
    }

    @Bean
    TransactionalOperator transactionalOperator(ReactiveTransactionManager transactionManager) {
        return TransactionalOperator.create(transactionManager);
    }
}
