package dev.fencedwrites.sink;

import dev.fencedwrites.avro.RegisteredSchema;
import dev.fencedwrites.avro.SchemaRegistryClient;
import dev.fencedwrites.avro.SchemaRegistryException;
import org.apache.avro.Schema;

/** A producer-side registry client that registers every schema under one fixed id, for {@code AvroSerializer} in tests. */
final class FixedIdSchemaRegistryClient implements SchemaRegistryClient {
    private final int id;
    private Schema registered;

    FixedIdSchemaRegistryClient(int id) {
        this.id = id;
    }

    @Override
    public int register(String subject, Schema schema) {
        registered = schema;
        return id;
    }

    @Override
    public int lookup(String subject, Schema schema) {
        if (!schema.equals(registered)) {
            throw new SchemaRegistryException("the schema is not registered under subject '" + subject + "'", 404, 40403, null);
        }
        return id;
    }

    @Override
    public RegisteredSchema latest(String subject) {
        if (registered == null) {
            throw new SchemaRegistryException("subject '" + subject + "' not found", 404, 40401, null);
        }
        return new RegisteredSchema(subject, 1, id, registered);
    }

    @Override
    public Schema getById(int requested) {
        if (requested != id || registered == null) {
            throw new SchemaRegistryException("schema id " + requested + " not found", 404, 40403, null);
        }
        return registered;
    }
}
