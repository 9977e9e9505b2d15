package io.queuebox.spring;

import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.MeterRegistry;
import io.queuebox.embed.config.Databases;
import io.queuebox.embed.config.Keys;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.embed.internal.Publishers;
import io.queuebox.ports.MessagePublisher;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * QueueBox in a Spring Boot application, on its {@link DataSource}: the {@code queuebox.*} properties, the
 * broker's publisher, the relay ({@link QueueBoxRelay}), the {@link TransactionalOutboxWriter}, QueueBox's schema
 * through Flyway when present, Actuator health ({@code outbox}, {@code outboxCapture}) and meters on the
 * application's {@link MeterRegistry}. Every bean backs off when the application defines its own.
 */
@AutoConfiguration(afterName = {"org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration"})
@ConditionalOnBean(DataSource.class)
@ConditionalOnProperty(prefix = "queuebox", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(QueueBoxProperties.class)
public class QueueBoxAutoConfiguration {

    /**
     * The validated configuration: the jar's keys and defaults, {@code database.url} from the data source.
     *
     * @throws io.queuebox.embed.config.ConfigException listing every bad {@code queuebox.*} property
     */
    @Bean
    @ConditionalOnMissingBean
    public QueueBoxConfig queueBoxConfig(QueueBoxProperties properties, DataSource dataSource) {
        return properties.toConfig(urlOf(dataSource));
    }

    /** The publisher of {@code queuebox.broker.type}, found through its provider like the jar finds it. */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    public MessagePublisher queueBoxPublisher(QueueBoxConfig config) {
        return Publishers.create(config.string(Keys.BROKER_TYPE), config.brokerSettings());
    }

    @Bean
    @ConditionalOnMissingBean
    public QueueBoxRelay queueBoxRelay(QueueBoxConfig config, DataSource dataSource, MessagePublisher publisher,
                                       ObjectProvider<MeterRegistry> meterRegistry,
                                       ObjectProvider<QueueBoxSchema> schema) {
        // The schema bean, when there is one, migrates before the relay claims from the table.
        schema.ifAvailable(QueueBoxSchema::check);
        return new QueueBoxRelay(config, dataSource, publisher, meterRegistry.getIfAvailable());
    }

    @Bean
    @ConditionalOnMissingBean
    public TransactionalOutboxWriter transactionalOutboxWriter(QueueBoxConfig config, DataSource dataSource,
                                                               QueueBoxRelay relay) {
        return new TransactionalOutboxWriter(dataSource,
                Databases.of(config).open(dataSource, Databases.outboxTable(config)).writer(), relay);
    }

    /** The data source's JDBC URL, which chooses the database adapter: from the pool's settings, else a connection. */
    static String urlOf(DataSource dataSource) {
        if (dataSource instanceof HikariDataSource pool && pool.getJdbcUrl() != null) {
            return pool.getJdbcUrl();
        }
        try (Connection connection = dataSource.getConnection()) {
            return connection.getMetaData().getURL();
        } catch (SQLException e) {
            throw new IllegalStateException("QueueBox needs the DataSource's JDBC URL to choose its database adapter,"
                    + " and the database did not answer: " + e.getMessage(), e);
        }
    }

    /** QueueBox's Flyway scripts, applied at start into QueueBox's own history table, when Flyway is present. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.flywaydb.core.Flyway")
    @ConditionalOnProperty(prefix = "queuebox", name = "migrate", havingValue = "true", matchIfMissing = true)
    static class SchemaConfiguration {

        @Bean
        @ConditionalOnMissingBean
        QueueBoxSchema queueBoxSchema(DataSource dataSource, QueueBoxConfig config) {
            return QueueBoxSchema.migrate(dataSource, config);
        }
    }

    /** Actuator's {@code outbox} and {@code outboxCapture} health contributors. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.actuate.health.HealthIndicator")
    static class HealthConfiguration {

        @Bean
        @ConditionalOnMissingBean(name = "outboxHealthIndicator")
        OutboxHealthIndicator outboxHealthIndicator(QueueBoxRelay relay) {
            return new OutboxHealthIndicator(relay);
        }

        @Bean
        @ConditionalOnMissingBean(name = "outboxCaptureHealthIndicator")
        OutboxCaptureHealthIndicator outboxCaptureHealthIndicator(QueueBoxConfig config) {
            return new OutboxCaptureHealthIndicator(config);
        }
    }
}
