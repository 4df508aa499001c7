package dev.fencedwrites.etcd;

import java.io.IOException;
import java.io.Reader;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * How the lease client (producer-lib) and the enforcer's token verification reaches etcd: endpoints, credentials, TLS, timeouts
 * and the lock
 * key prefix. Immutable; build with {@link #builder(List)} or load with {@link #load(Properties, Map)}.
 *
 * <p>Properties: {@link #DEFINITIONS}, each also settable through the environment variable {@code FENCE_} + the key upper
 * case with dots as underscores, e.g. {@code FENCE_ETCD_ENDPOINTS}; the environment wins. docs/reference/etcd-settings.md
 * is generated from that list, and the enforcer defines its {@code etcd.*} keys from it.
 *
 * @param endpoints      etcd client URLs, at least one
 * @param user           etcd user, or {@code null} without authentication
 * @param password       the user's password, or {@code null}
 * @param tlsCaFile      PEM CA file, or {@code null}
 * @param tlsCertFile    PEM client certificate, or {@code null}
 * @param tlsKeyFile     PEM PKCS#8 client key, or {@code null}
 * @param connectTimeout TCP connect timeout, positive
 * @param requestTimeout bound on each etcd request other than the lock wait, positive
 * @param lockPrefix     key prefix of lock keys
 */
public record EtcdSettings(List<String> endpoints, String user, String password, Path tlsCaFile, Path tlsCertFile,
        Path tlsKeyFile,
        Duration connectTimeout, Duration requestTimeout, String lockPrefix) {
    public static final String ENDPOINTS = "etcd.endpoints";
    public static final String USER = "etcd.user";
    public static final String PASSWORD = "etcd.password";
    public static final String TLS_CA_FILE = "etcd.tls.ca.file";
    public static final String TLS_CERT_FILE = "etcd.tls.cert.file";
    public static final String TLS_KEY_FILE = "etcd.tls.key.file";
    public static final String CONNECT_TIMEOUT_MS = "etcd.connect.timeout.ms";
    public static final String REQUEST_TIMEOUT_MS = "etcd.request.timeout.ms";
    public static final String LOCK_PREFIX = "etcd.lock.prefix";
    /**
     * The variables Kubernetes injects for a Service named like {@code fence-etcd} ({@code FENCE_ETCD_SERVICE_HOST},
     * {@code FENCE_ETCD_PORT_2379_TCP}, ...; Kubernetes docs, "Service" / environment variables): not settings, ignored.
     */
    private static final Pattern SERVICE_LINK = Pattern
            .compile(".*_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_[0-9]+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)?)");
    /** How a {@link Definition}'s value is written in a properties file. */
    public enum Type {
        /** Comma-separated values. */
        LIST, STRING,
        /** A string never logged. */
        PASSWORD,
        /** A positive whole number of milliseconds. */
        MILLIS
    }

    /**
     * One {@code etcd.*} setting as producer-lib ({@link #load}) and the enforcer (its configuration defines its etcd keys
     * from these) both read it.
     *
     * @param required     whether {@link #load} refuses settings without it
     * @param defaultValue the default as a property value, or {@code null} for none
     * @param displayName  a short label, e.g. for a generated reference
     */
    public record Definition(String key, Type type, boolean required, String defaultValue, String displayName,
            String documentation) {
    }

    /** The default of {@value #CONNECT_TIMEOUT_MS}. */
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(5);
    /** The default of {@value #REQUEST_TIMEOUT_MS}. */
    public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(10);

    /** Every {@code etcd.*} setting, in the order references list them. */
    public static final List<Definition> DEFINITIONS = List.of(
            new Definition(ENDPOINTS, Type.LIST, true, null, "etcd endpoints",
                    "etcd client URLs, http:// or https://, comma-separated."),
            new Definition(USER, Type.STRING, false, null, "etcd user", "etcd user, with etcd.password (both or neither)."),
            new Definition(PASSWORD, Type.PASSWORD, false, null, "etcd password", "Password of etcd.user."),
            new Definition(TLS_CA_FILE, Type.STRING, false, null, "etcd CA file",
                    "PEM file of the CA that signed etcd's server certificate; default: the JVM's trust store when an "
                            + "endpoint is https://."),
            new Definition(TLS_CERT_FILE, Type.STRING, false, null, "etcd client certificate",
                    "PEM client certificate, for etcd's --client-cert-auth, with etcd.tls.key.file (both or neither)."),
            new Definition(TLS_KEY_FILE, Type.STRING, false, null, "etcd client key", "PKCS#8 PEM key of etcd.tls.cert.file."),
            new Definition(CONNECT_TIMEOUT_MS, Type.MILLIS, false, Long.toString(DEFAULT_CONNECT_TIMEOUT.toMillis()),
                    "etcd connect timeout", "TCP connect timeout to etcd, in milliseconds."),
            new Definition(REQUEST_TIMEOUT_MS, Type.MILLIS, false, Long.toString(DEFAULT_REQUEST_TIMEOUT.toMillis()),
                    "etcd request timeout",
                    "Bound on each etcd request, in milliseconds: in producer-lib, the grant, the lock transactions, the "
                            + "keep-alives, the unlock and the revoke (the lock wait has its own timeout)."),
            new Definition(LOCK_PREFIX, Type.STRING, false, LockKeys.DEFAULT_PREFIX, "Lock prefix",
                    "Key prefix of the lock keys."));

    private static final List<String> KEYS = DEFINITIONS.stream().map(Definition::key).toList();

    /**
     * @throws IllegalArgumentException naming the setting, when a value is missing or invalid
     */
    public EtcdSettings {
        endpoints = List.copyOf(Objects.requireNonNull(endpoints, "endpoints"));
        if (endpoints.isEmpty()) {
            throw new IllegalArgumentException(
                    ENDPOINTS + ": at least one etcd endpoint is required, e.g. http://127.0.0.1:2379");
        }
        for (String endpoint : endpoints) {
            if (!endpoint.startsWith("http://") && !endpoint.startsWith("https://")) {
                throw new IllegalArgumentException(
                        ENDPOINTS + ": '" + endpoint + "' must be a URL starting with http:// or https://");
            }
            URI uri;
            try {
                uri = new URI(endpoint);
            } catch (URISyntaxException e) {
                throw new IllegalArgumentException(ENDPOINTS + ": '" + endpoint + "' is not a URL: " + e.getReason());
            }
            if (uri.getHost() == null || uri.getPort() < 0 || endpoint.contains(",")) {
                throw new IllegalArgumentException(
                        ENDPOINTS + ": '" + endpoint + "' must be one URL with a host and a port, e.g. http://127.0.0.1:2379"
                                + " (give several endpoints as separate list entries, or comma-separated in the property)");
            }
        }
        if ((user == null) != (password == null)) {
            throw new IllegalArgumentException(USER + " and " + PASSWORD + " go together: set both or neither");
        }
        if ((tlsCertFile == null) != (tlsKeyFile == null)) {
            throw new IllegalArgumentException(TLS_CERT_FILE + " and " + TLS_KEY_FILE + " go together: set both or neither");
        }
        for (Path file : Arrays.asList(tlsCaFile, tlsCertFile, tlsKeyFile)) {
            if (file != null && !Files.isReadable(file)) {
                throw new IllegalArgumentException("TLS file " + file + " does not exist or is not readable");
            }
        }
        if (connectTimeout == null || connectTimeout.isNegative() || connectTimeout.isZero()) {
            throw new IllegalArgumentException(CONNECT_TIMEOUT_MS + " must be positive");
        }
        if (requestTimeout == null || requestTimeout.isNegative() || requestTimeout.isZero()) {
            throw new IllegalArgumentException(REQUEST_TIMEOUT_MS + " must be positive");
        }
        lockPrefix = lockPrefix == null ? LockKeys.DEFAULT_PREFIX : lockPrefix;
    }

    /** Whether any endpoint uses TLS, or TLS files are set. */
    public boolean tls() {
        return tlsCaFile != null || tlsCertFile != null || endpoints.stream().anyMatch(e -> e.startsWith("https://"));
    }

    /** Settings with the defaults for everything but the endpoints. */
    public static Builder builder(List<String> endpoints) {
        return new Builder(endpoints);
    }

    /**
     * Reads the {@code etcd.*} keys of {@code properties}, overridden by {@code FENCE_ETCD_*} entries of
     * {@code environment} (pass {@link System#getenv()}). A blank value is read as unset, but for
     * {@value #LOCK_PREFIX}, which is refused blank. Keys outside {@code etcd.*} are ignored (the
     * file may hold the application's other settings); unknown {@code etcd.*} keys and unknown
     * {@code FENCE_ETCD_*} variables are refused, so a typo does not go unnoticed.
     *
     * @throws IllegalArgumentException naming the setting, when one is missing, unknown or invalid
     */
    public static EtcdSettings load(Properties properties, Map<String, String> environment) {
        Properties merged = new Properties();
        for (String name : properties.stringPropertyNames()) {
            if (name.startsWith("etcd.")) {
                if (!KEYS.contains(name)) {
                    throw new IllegalArgumentException("unknown setting " + name + "; known: " + new TreeSet<>(KEYS));
                }
                merged.setProperty(name, properties.getProperty(name).trim());
            }
        }
        fromEnvironment(environment).forEach(merged::setProperty);
        if (merged.containsKey(LOCK_PREFIX) && merged.getProperty(LOCK_PREFIX).isBlank()) {
            // Blank means unset for the other keys; here that would silently move the locks to the default prefix.
            throw new IllegalArgumentException(LOCK_PREFIX + " is blank: leave it out for the default ("
                    + LockKeys.DEFAULT_PREFIX + "), or set the prefix the writers lock under");
        }
        String endpoints = merged.getProperty(ENDPOINTS, "");
        List<String> list = new ArrayList<>();
        for (String endpoint : endpoints.split(",")) {
            if (!endpoint.isBlank()) {
                list.add(endpoint.trim());
            }
        }
        if (list.isEmpty()) {
            throw new IllegalArgumentException(
                    ENDPOINTS + " (or " + environmentName(ENDPOINTS) + ") is required, e.g. http://127.0.0.1:2379");
        }
        return new EtcdSettings(list, blankToNull(merged.getProperty(USER)), blankToNull(merged.getProperty(PASSWORD)),
                path(merged, TLS_CA_FILE), path(merged, TLS_CERT_FILE), path(merged, TLS_KEY_FILE),
                millis(merged, CONNECT_TIMEOUT_MS, DEFAULT_CONNECT_TIMEOUT), millis(merged, REQUEST_TIMEOUT_MS,
                        DEFAULT_REQUEST_TIMEOUT),
                blankToNull(merged.getProperty(LOCK_PREFIX)));
    }

    /**
     * Reads a properties file (UTF-8) with {@link #load(Properties, Map)}. A file that does not exist is read as an empty
     * one, so settings may come from the environment alone (a container with {@code FENCE_ETCD_ENDPOINTS} and no file);
     * with neither the file nor {@code FENCE_ETCD_ENDPOINTS}, the error names both.
     *
     * @throws IOException if the file exists but cannot be read
     * @throws IllegalArgumentException naming the setting, when one is missing, unknown or invalid
     */
    public static EtcdSettings load(Path file, Map<String, String> environment) throws IOException {
        Properties properties = new Properties();
        if (Files.notExists(file)) {
            String endpoints = environment.get(environmentName(ENDPOINTS));
            if (endpoints == null || endpoints.isBlank()) {
                throw new IllegalArgumentException("no etcd settings: " + file + " does not exist and "
                        + environmentName(ENDPOINTS) + " is not set; set " + ENDPOINTS + " in the file or the variable");
            }
            return load(properties, environment);
        }
        try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            properties.load(reader);
        }
        return load(properties, environment);
    }

    /**
     * The {@code etcd.*} settings {@code environment} gives, by key: each {@code FENCE_ETCD_*} variable
     * ({@link #environmentName}), trimmed. The one environment convention for these keys, in producer-lib and the enforcer.
     *
     * @throws IllegalArgumentException naming a {@code FENCE_ETCD_*} variable that is no setting (a typo), except the
     *                                  service variables Kubernetes injects
     */
    public static Map<String, String> fromEnvironment(Map<String, String> environment) {
        List<String> known = KEYS.stream().map(EtcdSettings::environmentName).toList();
        for (String name : environment.keySet()) {
            if (name.startsWith("FENCE_ETCD_") && !known.contains(name) && !SERVICE_LINK.matcher(name).matches()) {
                throw new IllegalArgumentException("unknown environment variable " + name + "; known: " + new TreeSet<>(known));
            }
        }
        Map<String, String> settings = new LinkedHashMap<>();
        for (String key : KEYS) {
            String value = environment.get(environmentName(key));
            if (value != null) {
                settings.put(key, value.trim());
            }
        }
        return settings;
    }

    /** The environment variable that overrides {@code key}: {@code etcd.lock.prefix} → {@code FENCE_ETCD_LOCK_PREFIX}. */
    public static String environmentName(String key) {
        return "FENCE_" + key.toUpperCase(Locale.ROOT).replace('.', '_');
    }

    private static String blankToNull(String value) {
        return value == null || value.isBlank() ? null : value;
    }

    private static Path path(Properties properties, String key) {
        String value = blankToNull(properties.getProperty(key));
        return value == null ? null : Path.of(value);
    }

    private static Duration millis(Properties properties, String key, Duration defaultValue) {
        String value = blankToNull(properties.getProperty(key));
        if (value == null) {
            return defaultValue;
        }
        try {
            return Duration.ofMillis(Long.parseLong(value));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + ": '" + value + "' is not a whole number of milliseconds");
        }
    }

    /** Never prints the password. */
    @Override
    public String toString() {
        return "EtcdSettings{endpoints=" + endpoints + ", user=" + user + ", password=" + (password == null ? "none" : "[hidden]")
                + ", tlsCaFile=" + tlsCaFile + ", tlsCertFile=" + tlsCertFile + ", connectTimeout=" + connectTimeout.toMillis()
                + " ms"
                + ", requestTimeout=" + requestTimeout.toMillis() + " ms, lockPrefix=" + lockPrefix + "}";
    }

    /** Builds {@link EtcdSettings}; every setting but the endpoints has a default. */
    public static final class Builder {
        private final List<String> endpoints;
        private String user;
        private String password;
        private Path tlsCaFile;
        private Path tlsCertFile;
        private Path tlsKeyFile;
        private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;
        private Duration requestTimeout = DEFAULT_REQUEST_TIMEOUT;
        private String lockPrefix = LockKeys.DEFAULT_PREFIX;

        private Builder(List<String> endpoints) {
            this.endpoints = endpoints;
        }

        /** etcd authentication. */
        public Builder credentials(String user, String password) {
            this.user = user;
            this.password = password;
            return this;
        }

        /** PEM CA file that signed etcd's server certificate. */
        public Builder tlsCa(Path caFile) {
            this.tlsCaFile = caFile;
            return this;
        }

        /** PEM client certificate and PKCS#8 key, for etcd's {@code --client-cert-auth}. */
        public Builder tlsClientCertificate(Path certFile, Path keyFile) {
            this.tlsCertFile = certFile;
            this.tlsKeyFile = keyFile;
            return this;
        }

        public Builder connectTimeout(Duration timeout) {
            this.connectTimeout = timeout;
            return this;
        }

        public Builder requestTimeout(Duration timeout) {
            this.requestTimeout = timeout;
            return this;
        }

        public Builder lockPrefix(String prefix) {
            this.lockPrefix = prefix;
            return this;
        }

        /** @throws IllegalArgumentException naming the setting, when one is invalid */
        public EtcdSettings build() {
            return new EtcdSettings(endpoints, user, password, tlsCaFile, tlsCertFile, tlsKeyFile, connectTimeout, requestTimeout,
                    lockPrefix);
        }
    }
}
