package dev.fencedwrites.avro;

/**
 * A schema registry call failed. The message says what was being done, what the registry's answer
 * means (naming the subject, version or schema id concerned), the URL tried, the HTTP status and
 * the registry's own {@code error_code} and message.
 */
public class SchemaRegistryException extends RuntimeException {
    /** Confluent error code: the subject does not exist. */
    public static final int SUBJECT_NOT_FOUND = 40401;
    /** Confluent error code: the subject has no such version. */
    public static final int VERSION_NOT_FOUND = 40402;
    /** Confluent error code: no such schema (an unknown id, or a schema not registered under the subject). */
    public static final int SCHEMA_NOT_FOUND = 40403;
    /** Confluent error code: the schema is not valid. */
    public static final int INVALID_SCHEMA = 42201;
    /** Confluent error code: the version is not valid. */
    public static final int INVALID_VERSION = 42202;

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

    /**
     * What a registry error answer means, in words naming what it concerns.
     *
     * @param subject the subject of the call, or null
     * @param version the version asked for (e.g. "latest"), or null
     * @param id      the schema id asked for, or null
     */
    static String meaning(int httpStatus, int errorCode, String subject, String version, Integer id) {
        String s = subject == null ? "?" : "'" + subject + "'";
        return switch (errorCode) {
            case SUBJECT_NOT_FOUND -> "subject " + s + " not found";
            case VERSION_NOT_FOUND -> "version " + (version == null ? "?" : version) + " of subject " + s + " not found";
            case SCHEMA_NOT_FOUND -> id != null
                    ? "schema id " + id + " not found"
                    : "the schema is not registered under subject " + s;
            case INVALID_SCHEMA -> "the registry refused the schema for subject " + s + " as invalid";
            case INVALID_VERSION ->
                "version " + (version == null ? "?" : version) + " of subject " + s + " is not a valid version";
            case 50001 -> "the registry's backend store failed";
            case 50002 -> "the registry's operation timed out";
            case 50003 -> "the registry could not forward the request to its leader";
            default -> switch (httpStatus) {
                case 409 -> "the schema is incompatible with the versions registered under subject " + s;
                case 401 -> "the registry refused the credentials (not authenticated; see basic.auth.credentials.source)";
                case 403 -> "the registry refused access (not authorized)";
                case 404 -> subject != null
                        ? "not found (subject " + s + (id != null ? ", id " + id : "") + ")"
                        : id != null ? "schema id " + id + " not found" : "not found (is the URL the registry's base URL?)";
                case 422 -> "the registry refused the request as invalid (subject " + s + ")";
                default -> httpStatus >= 500 ? "registry server error" : "unexpected answer";
            };
        };
    }
}
