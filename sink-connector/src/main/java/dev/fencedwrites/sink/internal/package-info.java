/**
 * The sink task's write path, used only by this module: decoding records into rows, the table's structure, the
 * guarded upsert statement, the batch writer and the outcome reports (the split of kafka-connect-jdbc's
 * {@code JdbcSinkTask}, {@code DbStructure} and {@code BufferedRecords}).
 */
package dev.fencedwrites.sink.internal;
