package dev.fencedwrites.sink.internal;

import dev.fencedwrites.schemas.registry.SchemaRegistryException;

/** Tells a schema registry outage (retry) from a bad value (dead-letter). */
public final class RegistryErrors {
    private RegistryErrors() {
    }

    /**
     * Whether {@code error} comes from the registry being unreachable or failing (no HTTP answer,
     * or a 5xx), as opposed to the value being bad (unknown schema id, undecodable bytes).
     */
    public static boolean isTransient(Throwable error) {
        for (Throwable cause = error; cause != null; cause = cause.getCause()) {
            if (cause instanceof SchemaRegistryException registry) {
                return registry.httpStatus() < 0 || registry.httpStatus() >= 500;
            }
        }
        return false;
    }
}
