/**
 * Support code for QueueBox's SQL adapters ({@code adapter-postgres}, {@code adapter-sqlserver}): the
 * database-neutral pieces both of them need. Not an API: the types here may change in any release without
 * notice; use the adapters' entry types instead. What differs between databases (SQL text, quoting, locks)
 * stays in each adapter.
 */
package io.queuebox.jdbc;
