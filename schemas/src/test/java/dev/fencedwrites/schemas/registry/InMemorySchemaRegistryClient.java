package dev.fencedwrites.schemas.registry;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;

/**
 * A {@link SchemaRegistryClient} held in memory, for unit tests: ids are registry-wide and start
 * at {@code firstId}; registering the same schema again (under any subject) returns its id.
 */
final class InMemorySchemaRegistryClient implements SchemaRegistryClient {
    private final int firstId;
    private final List<Schema> schemas = new ArrayList<>();
    private final Map<String, Map<Schema, Integer>> subjects = new HashMap<>();

    InMemorySchemaRegistryClient(int firstId) {
        this.firstId = firstId;
    }

    @Override
    public synchronized int register(String subject, Schema schema) {
        int index = schemas.indexOf(schema);
        if (index < 0) {
            schemas.add(schema);
            index = schemas.size() - 1;
        }
        int id = firstId + index;
        subjects.computeIfAbsent(subject, s -> new HashMap<>()).put(schema, id);
        return id;
    }

    @Override
    public synchronized Schema getById(int id) {
        int index = id - firstId;
        if (index < 0 || index >= schemas.size()) {
            throw new SchemaRegistryException("Schema " + id + " not found", 404, 40403, null);
        }
        return schemas.get(index);
    }

    /** The id registered under {@code subject} for {@code schema}, or {@code null}. */
    synchronized Integer idOf(String subject, Schema schema) {
        return subjects.getOrDefault(subject, Map.of()).get(schema);
    }
}
