package dev.fencedwrites.avro.connect;

import dev.fencedwrites.avro.SchemaRegistryException;

/** Tells a schema registry outage (retry) from a bad value (dead-letter). */
public final class RegistryErrors {
    private RegistryErrors() {
    }

    /**
     * Whether {@code error} comes from the registry being unreachable, throttling or failing (no
     * HTTP answer, 408, 429, 5xx), as opposed to the value being bad (unknown schema id, undecodable bytes).
     */
    public static boolean isTransient(Throwable error) {
        int status = status(error);
        return status == -1 || status == 408 || status == 429 || status >= 500;
    }

    /** Whether the registry refused our credentials (401, 403): a configuration error, not a bad record. */
    public static boolean isRefused(Throwable error) {
        int status = status(error);
        return status == 401 || status == 403;
    }

    /** The registry's HTTP status (-1 when unreachable), or 0 when the error did not come from the registry. */
    private static int status(Throwable error) {
        for (Throwable cause = error; cause != null; cause = cause.getCause()) {
            if (cause instanceof SchemaRegistryException registry) {
                return registry.httpStatus();
            }
        }
        return 0;
    }
}
