/**
 * The database plug-in seam and the support code of QueueBox's SQL adapters ({@code adapter-postgres},
 * {@code adapter-sqlserver}).
 *
 * <p>{@link io.queuebox.jdbc.DatabaseProvider} (with {@link io.queuebox.jdbc.OutboxDatabase},
 * {@link io.queuebox.jdbc.OutboxTable} and {@link io.queuebox.jdbc.DatabaseLocation}) is an SPI: each SQL adapter
 * implements it and lists it in {@code META-INF/services}, and the bootstrap jar finds the database through
 * it from {@code database.url}, as it finds brokers through {@code MessagePublisherProvider}. It lives here,
 * not in the ports, because it speaks {@code javax.sql.DataSource} and the ports stay JDK-only without JDBC.
 *
 * <p>The other types are not an API: they may change in any release without notice; use the adapters' entry
 * types instead. What differs between databases (SQL text, quoting, locks) stays in each adapter.
 */
package io.queuebox.jdbc;
