package dev.fencedwrites.avro;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
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
        subjects.computeIfAbsent(subject, s -> new LinkedHashMap<>()).putIfAbsent(schema, id);
        return id;
    }

    @Override
    public synchronized int lookup(String subject, Schema schema) {
        Map<Schema, Integer> ids = subjects.get(subject);
        if (ids == null) {
            throw new SchemaRegistryException("subject '" + subject + "' not found", 404, SchemaRegistryException.SUBJECT_NOT_FOUND, null);
        }
        Integer id = ids.get(schema);
        if (id == null) {
            throw new SchemaRegistryException("the schema is not registered under subject '" + subject + "'", 404,
                    SchemaRegistryException.SCHEMA_NOT_FOUND, null);
        }
        return id;
    }

    /** The schema registered last under {@code subject} is its latest version; versions count registrations of new schemas. */
    @Override
    public synchronized RegisteredSchema latest(String subject) {
        Map<Schema, Integer> ids = subjects.get(subject);
        if (ids == null || ids.isEmpty()) {
            throw new SchemaRegistryException("subject '" + subject + "' not found", 404, SchemaRegistryException.SUBJECT_NOT_FOUND, null);
        }
        Map.Entry<Schema, Integer> last = null;
        for (Map.Entry<Schema, Integer> entry : ids.entrySet()) {
            last = entry;
        }
        return new RegisteredSchema(subject, ids.size(), last.getValue(), last.getKey());
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
