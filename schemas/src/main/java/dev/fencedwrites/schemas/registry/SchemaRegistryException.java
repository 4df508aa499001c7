package dev.fencedwrites.schemas.registry;

/** A schema registry call failed; the message names the URL, the HTTP status and the registry's error. */
public class SchemaRegistryException extends RuntimeException {
    private final int httpStatus;
    private final int errorCode;

    /**
     * @param httpStatus the HTTP status, or -1 when the registry could not be reached
     * @param errorCode  the registry's {@code error_code}, or -1 when it gave none
     */
    public SchemaRegistryException(String message, int httpStatus, int errorCode, Throwable cause) {
        super(message, cause);
        this.httpStatus = httpStatus;
        this.errorCode = errorCode;
    }

    /** The HTTP status, or -1 when the registry could not be reached. */
    public int httpStatus() {
        return httpStatus;
    }

    /** The registry's {@code error_code} (e.g. 40403 schema not found), or -1. */
    public int errorCode() {
        return errorCode;
    }
}
