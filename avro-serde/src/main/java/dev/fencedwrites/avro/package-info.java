/**
 * Avro in the Confluent wire format: a schema-registry REST client and Kafka serializers that take Confluent's setting
 * names ({@link dev.fencedwrites.avro.AvroSerdeConfig}). Source of the format: Confluent's "Wire format" documentation.
 */
package dev.fencedwrites.avro;
