package dev.fencedwrites.avro;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;

/**
 * A {@link SchemaRegistryClient} held in memory: a test double for this project's tests and for
 * users' tests of code that takes a registry client (as Confluent ships {@code MockSchemaRegistryClient}
 * in its main artifact). No HTTP, no compatibility checks, nothing persisted; thread-safe.
 *
 * <p>Ids are registry-wide and start at {@code firstId}: the first distinct schema registered gets
 * {@code firstId}, the next {@code firstId + 1}, and registering the same schema again (under any
 * subject) returns its id, as a Confluent registry does. A subject's versions count the distinct
 * schemas registered under it; its latest version is the one registered last. Unknown subjects,
 * schemas and ids raise {@link SchemaRegistryException} with the registry's 404 error codes
 * ({@value SchemaRegistryException#SUBJECT_NOT_FOUND}, {@value SchemaRegistryException#SCHEMA_NOT_FOUND}).
 * To serve a schema under a fixed id (say, one a test's records carry), register it first into a
 * client whose {@code firstId} is that id. {@link #unreachable(boolean)} simulates an outage.
 */
public final class InMemorySchemaRegistryClient implements SchemaRegistryClient {
    private final int firstId;
    private final List<Schema> schemas = new ArrayList<>();
    private final Map<String, Map<Schema, Integer>> subjects = new HashMap<>();
    private volatile boolean unreachable;

    /** An empty registry whose first schema gets id 1. */
    public InMemorySchemaRegistryClient() {
        this(1);
    }

    /**
     * An empty registry whose first schema gets id {@code firstId}.
     *
     * @throws IllegalArgumentException if {@code firstId} is not positive (the registry's ids are)
     */
    public InMemorySchemaRegistryClient(int firstId) {
        if (firstId <= 0) {
            throw new IllegalArgumentException("firstId must be positive, not " + firstId);
        }
        this.firstId = firstId;
    }

    @Override
    public synchronized int register(String subject, Schema schema) {
        failIfUnreachable();
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
        failIfUnreachable();
        Map<Schema, Integer> ids = subjects.get(subject);
        if (ids == null) {
            throw new SchemaRegistryException("subject '" + subject + "' not found", 404,
                    SchemaRegistryException.SUBJECT_NOT_FOUND, null);
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
        failIfUnreachable();
        Map<Schema, Integer> ids = subjects.get(subject);
        if (ids == null || ids.isEmpty()) {
            throw new SchemaRegistryException("subject '" + subject + "' not found", 404,
                    SchemaRegistryException.SUBJECT_NOT_FOUND, null);
        }
        Map.Entry<Schema, Integer> last = null;
        for (Map.Entry<Schema, Integer> entry : ids.entrySet()) {
            last = entry;
        }
        return new RegisteredSchema(subject, ids.size(), last.getValue(), last.getKey());
    }

    @Override
    public synchronized Schema getById(int id) {
        failIfUnreachable();
        int index = id - firstId;
        if (index < 0 || index >= schemas.size()) {
            throw new SchemaRegistryException("Schema " + id + " not found", 404, SchemaRegistryException.SCHEMA_NOT_FOUND, null);
        }
        return schemas.get(index);
    }

    /** The id registered under {@code subject} for {@code schema}, or {@code null}. */
    public synchronized Integer idOf(String subject, Schema schema) {
        return subjects.getOrDefault(subject, Map.of()).get(schema);
    }

    /**
     * While {@code unreachable}, every call fails as when no registry URL answers: a
     * {@link SchemaRegistryException} with HTTP status -1, which callers treat as transient
     * (the Connect converter throws a {@code RetriableException}). Off again, the registry answers as before.
     */
    public void unreachable(boolean unreachable) {
        this.unreachable = unreachable;
    }

    private void failIfUnreachable() {
        if (unreachable) {
            throw new SchemaRegistryException("no schema registry URL answered (the in-memory registry is set unreachable)", -1,
                    -1, null);
        }
    }
}
