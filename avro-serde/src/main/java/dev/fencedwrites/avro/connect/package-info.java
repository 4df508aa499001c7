/**
 * The Kafka Connect converter over {@link dev.fencedwrites.avro}: Avro values in the Confluent wire format to and from
 * Connect data, with errors that say which record and which schema id failed.
 */
package dev.fencedwrites.avro.connect;
