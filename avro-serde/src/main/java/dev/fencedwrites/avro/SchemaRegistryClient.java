package dev.fencedwrites.avro;

import org.apache.avro.Schema;

/**
 * The part of a Confluent-compatible schema registry that the Avro serde needs.
 * Implementations cache: a registered schema is not sent twice, and an id is not fetched twice
 * while it stays in the (bounded) cache.
 */
public interface SchemaRegistryClient {
    /**
     * Registers {@code schema} under {@code subject} (idempotent on the registry side).
     *
     * @return the registry-wide schema id
     * @throws SchemaRegistryException if the registry refuses (incompatible, invalid schema: the
     *     message names the subject) or cannot be reached
     */
    int register(String subject, Schema schema);

    /**
     * The id of {@code schema} as already registered under {@code subject}, without registering it.
     *
     * @return the registry-wide schema id
     * @throws SchemaRegistryException if the subject does not exist or the schema is not registered
     *     under it (the message names the subject), or the registry cannot be reached
     */
    int lookup(String subject, Schema schema);

    /**
     * The latest version registered under {@code subject}.
     *
     * @throws SchemaRegistryException if the subject does not exist (the message names it) or the
     *     registry cannot be reached
     */
    RegisteredSchema latest(String subject);

    /**
     * Fetches the schema with the registry-wide id {@code id}.
     *
     * @throws SchemaRegistryException if the id is unknown (the message names it), names a schema
     *     that is not valid Avro (another schema type, or text Avro's parser refuses), or the
     *     registry cannot be reached
     */
    Schema getById(int id);
}
