/**
 * The fenced JDBC sink for Kafka Connect: connector, task and configuration, and {@link
 * dev.fencedwrites.sink.FencedTableWriter}, the same write path without Connect. The guarded upsert applies the
 * decision rule (docs/concepts/decision-rule.md) in the database, so a stale write changes no row.
 */
package dev.fencedwrites.sink;
