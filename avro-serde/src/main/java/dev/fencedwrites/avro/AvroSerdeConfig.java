package dev.fencedwrites.avro;

import java.time.Duration;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;

/**
 * Configuration names of the schema registry client and the Avro serde. They carry the names,
 * meanings and (unless said otherwise) defaults of Confluent's client and serde, so existing
 * producer, consumer and converter properties carry over. Values may be strings (as in a
 * properties file) or the matching Java type (Boolean, Integer, Long).
 *
 * <p>Client settings other than the URL and TLS may also be given with the {@code schema.registry.}
 * prefix (e.g. {@code schema.registry.basic.auth.user.info}), which wins over the bare name, as in
 * Confluent's serde. TLS settings take only their {@code schema.registry.ssl.} names, so a Kafka
 * client's own {@code ssl.*} settings never reach the registry.
 */
public final class AvroSerdeConfig {
    /** Prefix under which every client setting may also be given; the prefixed form wins. */
    public static final String CLIENT_PREFIX = "schema.registry.";

    /**
     * One or more base URLs of a Confluent-compatible registry, comma-separated, http or https
     * (e.g. Apicurio's {@code http://host:8080/apis/ccompat/v7}). Requests go to the URL that last
     * answered; on an I/O error or an HTTP 5xx the next one is tried. Required unless a client is
     * injected.
     */
    public static final String SCHEMA_REGISTRY_URL = "schema.registry.url";

    /**
     * Where HTTP basic-auth credentials come from: {@code URL} (default; the user-info part
     * {@code user:password@} of each URL, none if a URL has none) or {@code USER_INFO}
     * ({@value #BASIC_AUTH_USER_INFO}). Confluent's {@code SASL_INHERIT} and any other value is refused
     * with a {@link ConfigException}. Credentials are sent with every request.
     */
    public static final String BASIC_AUTH_CREDENTIALS_SOURCE = "basic.auth.credentials.source";
    /** {@code user:password} for {@code basic.auth.credentials.source=USER_INFO}; required then. */
    public static final String BASIC_AUTH_USER_INFO = "basic.auth.user.info";
    /** Bearer authentication is not supported; setting this refuses the configuration. */
    public static final String BEARER_AUTH_CREDENTIALS_SOURCE = "bearer.auth.credentials.source";

    /** Trust store file (path) for https registry URLs; unset: the JVM's default trust. */
    public static final String SSL_TRUSTSTORE_LOCATION = "schema.registry.ssl.truststore.location";
    /** Password of the trust store; unset: none. */
    public static final String SSL_TRUSTSTORE_PASSWORD = "schema.registry.ssl.truststore.password";
    /** Trust store format, a JDK {@code KeyStore} type such as JKS or PKCS12 (default JKS). */
    public static final String SSL_TRUSTSTORE_TYPE = "schema.registry.ssl.truststore.type";
    /** Key store file (path) holding the client certificate for mutual TLS; unset: no client certificate. */
    public static final String SSL_KEYSTORE_LOCATION = "schema.registry.ssl.keystore.location";
    /** Password of the key store; unset: none. */
    public static final String SSL_KEYSTORE_PASSWORD = "schema.registry.ssl.keystore.password";
    /** Key store format, a JDK {@code KeyStore} type such as JKS or PKCS12 (default JKS). */
    public static final String SSL_KEYSTORE_TYPE = "schema.registry.ssl.keystore.type";
    /** Password of the private key in the key store; unset: the key store password. */
    public static final String SSL_KEY_PASSWORD = "schema.registry.ssl.key.password";
    /**
     * Only {@code https} (the default: the server certificate must name the host) is accepted;
     * turning hostname verification off is refused, as the JDK HTTP client can only do that JVM-wide.
     */
    public static final String SSL_ENDPOINT_IDENTIFICATION_ALGORITHM = "schema.registry.ssl.endpoint.identification.algorithm";

    /** Retries of a call after I/O errors or HTTP 5xx on every URL (default 3, at least 0). A 4xx is never retried. */
    public static final String MAX_RETRIES = "max.retries";
    /** Wait before the first retry, in milliseconds (default 1000); each later wait doubles. */
    public static final String RETRIES_WAIT_MS = "retries.wait.ms";
    /** Longest wait between retries, in milliseconds (default 2000, Confluent's documented default). */
    public static final String RETRIES_MAX_WAIT_MS = "retries.max.wait.ms";
    /** Connection timeout per request, in milliseconds (default 10000; Confluent's is 60000). */
    public static final String HTTP_CONNECT_TIMEOUT_MS = "http.connect.timeout.ms";
    /** Response timeout per request, in milliseconds (default 10000; Confluent's is 60000). */
    public static final String HTTP_READ_TIMEOUT_MS = "http.read.timeout.ms";
    /** This project's earlier name for {@value #HTTP_READ_TIMEOUT_MS}, in milliseconds; still read when that is unset. */
    public static final String REQUEST_TIMEOUT_MS = "schema.registry.request.timeout.ms";

    /**
     * Bound of each cache (default 1000, at least 1): schemas remembered per subject, subjects
     * remembered, and schemas remembered by id. The least useful entries are dropped beyond it and
     * fetched again when needed.
     */
    public static final String MAX_SCHEMAS_PER_SUBJECT = "max.schemas.per.subject";
    /** Subjects whose latest version is remembered for {@value #USE_LATEST_VERSION} (default 1000, at least 1). */
    public static final String LATEST_CACHE_SIZE = "latest.cache.size";
    /** Seconds a subject's latest version is remembered; -1 (default) for as long as it stays cached. */
    public static final String LATEST_CACHE_TTL_SEC = "latest.cache.ttl.sec";

    /**
     * Register a record's schema under its subject on first use (default true). When false, the
     * schema must already be registered: it is looked up with {@code POST /subjects/{subject}} and a
     * schema not registered fails the send with a message naming the subject.
     */
    public static final String AUTO_REGISTER_SCHEMAS = "auto.register.schemas";
    /**
     * With {@value #AUTO_REGISTER_SCHEMAS}{@code =false}: write with the subject's latest registered
     * version ({@code GET /subjects/{subject}/versions/latest}) instead of looking up the record's own
     * schema (default false). As in Confluent's serializer, it has no effect while schemas are
     * auto-registered. The record is converted to that schema by Avro's resolution rules; a record
     * the latest version cannot read fails.
     */
    public static final String USE_LATEST_VERSION = "use.latest.version";
    /** Subject name strategy for record keys; see {@link SubjectNameStrategy} (default topic). */
    public static final String KEY_SUBJECT_NAME_STRATEGY = "key.subject.name.strategy";
    /** Subject name strategy for record values; see {@link SubjectNameStrategy} (default topic). */
    public static final String VALUE_SUBJECT_NAME_STRATEGY = "value.subject.name.strategy";
    /** Deserialize into the generated SpecificRecord class (true) or a GenericRecord (false, default). */
    public static final String SPECIFIC_AVRO_READER = "specific.avro.reader";

    private AvroSerdeConfig() {
    }

    /**
     * A registry client from serde or converter settings (every client setting above; unknown keys
     * are ignored, as Kafka passes a serde the whole client configuration).
     *
     * @throws ConfigException if the URL is missing or a setting is invalid or unsupported; the
     *     message names the setting
     */
    public static SchemaRegistryClient clientFrom(Map<String, ?> configs) {
        return new RestSchemaRegistryClient(configs);
    }

    /**
     * {@code url} fit for logs and messages: its user info (credentials) replaced by {@code ***},
     * e.g. {@code https://***@registry:8081}; the rule is {@link dev.fencedwrites.contract.Redaction#url(String)}.
     */
    public static String withoutCredentials(String url) {
        return ClientSettings.redact(url);
    }

    /** Default per-request timeout, kept from the first version of this client. */
    static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);
}
