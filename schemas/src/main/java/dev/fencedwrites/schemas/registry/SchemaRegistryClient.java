package dev.fencedwrites.schemas.registry;

import org.apache.avro.Schema;

/**
 * The part of a Confluent-compatible schema registry that the Avro serde needs.
 * Implementations cache both directions: a registered schema is never sent twice, and an id is
 * never fetched twice.
 */
public interface SchemaRegistryClient {
    /**
     * Registers {@code schema} under {@code subject} (idempotent on the registry side).
     *
     * @return the registry-wide schema id
     * @throws SchemaRegistryException if the registry refuses or cannot be reached
     */
    int register(String subject, Schema schema);

    /**
     * Fetches the schema with the registry-wide id {@code id}.
     *
     * @throws SchemaRegistryException if the id is unknown or the registry cannot be reached
     */
    Schema getById(int id);
}
