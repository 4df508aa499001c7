package dev.fencedwrites.avro;

import org.apache.avro.Schema;

/**
 * A schema as registered under a subject.
 *
 * @param subject the subject
 * @param version the version under the subject, from 1
 * @param id      the registry-wide schema id (the one written in the Confluent wire format)
 * @param schema  the Avro schema
 */
public record RegisteredSchema(String subject, int version, int id, Schema schema) {
}
