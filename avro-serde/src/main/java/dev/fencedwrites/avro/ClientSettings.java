package dev.fencedwrites.avro;

import static dev.fencedwrites.avro.AvroSerdeConfig.*;

import dev.fencedwrites.contract.Redaction;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.KeyStoreException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.types.Password;

/**
 * The registry client's settings, parsed and checked from Confluent-named properties (see
 * {@link AvroSerdeConfig}). Every problem is a {@link ConfigException} naming the setting.
 */
final class ClientSettings {
    /** One registry URL: where requests go (no user info) and the Authorization header for it, or null. */
    record Endpoint(URI uri, String authorization) {
        @Override
        public String toString() {
            return uri.toString();
        }
    }

    final List<Endpoint> endpoints;
    final SSLContext sslContext;
    final Duration connectTimeout;
    final Duration readTimeout;
    final int maxRetries;
    final long retriesWaitMs;
    final long retriesMaxWaitMs;
    final int maxSchemasPerSubject;
    final int latestCacheSize;
    final long latestCacheTtlSec;

    private ClientSettings(List<Endpoint> endpoints, SSLContext sslContext, Duration connectTimeout, Duration readTimeout,
            int maxRetries,
            long retriesWaitMs, long retriesMaxWaitMs, int maxSchemasPerSubject, int latestCacheSize, long latestCacheTtlSec) {
        this.endpoints = List.copyOf(endpoints);
        this.sslContext = sslContext;
        this.connectTimeout = connectTimeout;
        this.readTimeout = readTimeout;
        this.maxRetries = maxRetries;
        this.retriesWaitMs = retriesWaitMs;
        this.retriesMaxWaitMs = retriesMaxWaitMs;
        this.maxSchemasPerSubject = maxSchemasPerSubject;
        this.latestCacheSize = latestCacheSize;
        this.latestCacheTtlSec = latestCacheTtlSec;
    }

    /** Settings from a properties map; unknown keys are ignored. */
    static ClientSettings from(Map<String, ?> configs) {
        Object urls = configs.get(SCHEMA_REGISTRY_URL);
        if (urls == null || urls.toString().isBlank()) {
            throw new ConfigException(SCHEMA_REGISTRY_URL + " is required by the fenced-writes schema registry client"
                    + " (one or more registry base URLs, comma-separated)");
        }
        if (value(configs, BEARER_AUTH_CREDENTIALS_SOURCE) != null) {
            throw new ConfigException(
                    BEARER_AUTH_CREDENTIALS_SOURCE + " is not supported by the fenced-writes schema registry client;"
                            + " use HTTP basic auth (" + BASIC_AUTH_CREDENTIALS_SOURCE + "=USER_INFO or URL)");
        }
        String source = string(configs, BASIC_AUTH_CREDENTIALS_SOURCE, "URL").trim().toUpperCase(Locale.ROOT);
        String userInfoHeader = null;
        switch (source) {
            case "URL" -> {
            }
            case "USER_INFO" -> {
                Object info = value(configs, BASIC_AUTH_USER_INFO);
                if (info == null || info.toString().isEmpty()) {
                    throw new ConfigException(
                            BASIC_AUTH_CREDENTIALS_SOURCE + "=USER_INFO needs " + BASIC_AUTH_USER_INFO + " (user:password)");
                }
                userInfoHeader = basic(info.toString(), BASIC_AUTH_USER_INFO);
            }
            default -> throw new ConfigException(BASIC_AUTH_CREDENTIALS_SOURCE, source,
                    "not supported by the fenced-writes schema registry client; use USER_INFO (with " + BASIC_AUTH_USER_INFO
                            + "=user:password) or URL (credentials in each URL as https://user:password@host)");
        }
        List<Endpoint> endpoints = new ArrayList<>();
        for (String raw : urls.toString().split(",")) {
            String trimmed = raw.trim();
            if (!trimmed.isEmpty()) {
                endpoints.add(endpoint(trimmed, source.equals("URL"), userInfoHeader));
            }
        }
        if (endpoints.isEmpty()) {
            throw new ConfigException(SCHEMA_REGISTRY_URL, urls, "no URL in the list");
        }
        String algorithm = string(configs, SSL_ENDPOINT_IDENTIFICATION_ALGORITHM, "https");
        if (!algorithm.equalsIgnoreCase("https")) {
            throw new ConfigException(SSL_ENDPOINT_IDENTIFICATION_ALGORITHM, algorithm,
                    "only https (verify that the registry's certificate names its host) is supported");
        }
        Duration readTimeout = Duration.ofMillis(value(configs, HTTP_READ_TIMEOUT_MS) != null
                ? longAtLeast(configs, HTTP_READ_TIMEOUT_MS, 0, 1)
                : longAtLeast(configs, REQUEST_TIMEOUT_MS, AvroSerdeConfig.DEFAULT_TIMEOUT.toMillis(), 1));
        Duration connectTimeout = Duration
                .ofMillis(longAtLeast(configs, HTTP_CONNECT_TIMEOUT_MS, AvroSerdeConfig.DEFAULT_TIMEOUT.toMillis(), 1));
        long wait = longAtLeast(configs, RETRIES_WAIT_MS, 1000, 0);
        long maxWait = longAtLeast(configs, RETRIES_MAX_WAIT_MS, 2000, 0);
        long ttl = longAtLeast(configs, LATEST_CACHE_TTL_SEC, -1, -1);
        return new ClientSettings(endpoints, sslContext(configs), connectTimeout, readTimeout,
                (int) longAtLeast(configs, MAX_RETRIES, 3, 0), wait, maxWait,
                (int) longAtLeast(configs, MAX_SCHEMAS_PER_SUBJECT, 1000, 1),
                (int) longAtLeast(configs, LATEST_CACHE_SIZE, 1000, 1), ttl);
    }

    /**
     * The value of a client setting: {@code schema.registry.<name>} if given, else {@code name}.
     * Names already starting with the prefix (the URL, TLS) are read as they are.
     */
    static Object value(Map<String, ?> configs, String name) {
        if (!name.startsWith(CLIENT_PREFIX)) {
            Object prefixed = configs.get(CLIENT_PREFIX + name);
            if (prefixed != null) {
                return prefixed;
            }
        }
        return configs.get(name);
    }

    private static String string(Map<String, ?> configs, String name, String fallback) {
        Object value = value(configs, name);
        return value == null ? fallback : value.toString();
    }

    /** A whole number setting (given as a number or a decimal string), at least {@code min}. */
    static long longAtLeast(Map<String, ?> configs, String name, long fallback, long min) {
        Object value = value(configs, name);
        if (value == null) {
            return fallback;
        }
        long parsed;
        if (value instanceof Integer || value instanceof Long || value instanceof Short) {
            parsed = ((Number) value).longValue();
        } else {
            try {
                parsed = Long.parseLong(value.toString().trim());
            } catch (NumberFormatException e) {
                throw new ConfigException(name, value, "not a whole number");
            }
        }
        if (parsed < min) {
            throw new ConfigException(name, value, "must be at least " + min);
        }
        return parsed;
    }

    /** A boolean setting given as a Boolean or "true"/"false" (any case); anything else is refused. */
    static boolean bool(Map<String, ?> configs, String name, boolean fallback) {
        Object value = value(configs, name);
        if (value == null) {
            return fallback;
        }
        if (value instanceof Boolean b) {
            return b;
        }
        String text = value.toString().trim();
        if (text.equalsIgnoreCase("true")) {
            return true;
        }
        if (text.equalsIgnoreCase("false")) {
            return false;
        }
        throw new ConfigException(name, value, "expected true or false");
    }

    private static Endpoint endpoint(String raw, boolean credentialsFromUrl, String userInfoHeader) {
        URI uri;
        try {
            uri = new URI(raw);
        } catch (URISyntaxException e) {
            throw new ConfigException(SCHEMA_REGISTRY_URL, redact(raw), "not a URL: " + e.getReason());
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals("http") && !scheme.equals("https") || uri.getHost() == null) {
            throw new ConfigException(SCHEMA_REGISTRY_URL, redact(raw), "expected http://host[:port][/path] or https://...");
        }
        String authorization = userInfoHeader;
        if (credentialsFromUrl && uri.getRawUserInfo() != null) {
            authorization = basic(URLDecoder.decode(uri.getRawUserInfo(), StandardCharsets.UTF_8), SCHEMA_REGISTRY_URL);
        }
        String path = uri.getRawPath() == null ? "" : uri.getRawPath().replaceAll("/+$", "");
        URI clean = URI.create(scheme + "://" + uri.getRawAuthority().replaceFirst("^.*@", "") + path);
        return new Endpoint(clean, authorization);
    }

    private static String basic(String userInfo, String setting) {
        if (userInfo.indexOf(':') < 0) {
            throw new ConfigException(setting + ": basic-auth credentials must be user:password (no ':' found)");
        }
        return "Basic " + Base64.getEncoder().encodeToString(userInfo.getBytes(StandardCharsets.UTF_8));
    }

    /** A URL for messages, credentials hidden by {@link Redaction#url(String)}. */
    static String redact(String url) {
        return Redaction.url(url);
    }

    private static SSLContext sslContext(Map<String, ?> configs) {
        Object trustLocation = configs.get(SSL_TRUSTSTORE_LOCATION);
        Object keyLocation = configs.get(SSL_KEYSTORE_LOCATION);
        if (blank(trustLocation) && blank(keyLocation)) {
            return null;
        }
        try {
            TrustManagerFactory trust = null;
            if (!blank(trustLocation)) {
                KeyStore store = load(trustLocation.toString(), SSL_TRUSTSTORE_LOCATION,
                        string(configs, SSL_TRUSTSTORE_TYPE, "JKS"),
                        password(configs, SSL_TRUSTSTORE_PASSWORD));
                trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                trust.init(store);
            }
            KeyManagerFactory keys = null;
            if (!blank(keyLocation)) {
                char[] storePassword = password(configs, SSL_KEYSTORE_PASSWORD);
                KeyStore store = load(keyLocation.toString(), SSL_KEYSTORE_LOCATION, string(configs, SSL_KEYSTORE_TYPE, "JKS"),
                        storePassword);
                char[] keyPassword = configs.get(SSL_KEY_PASSWORD) != null ? password(configs, SSL_KEY_PASSWORD) : storePassword;
                keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                try {
                    keys.init(store, keyPassword);
                } catch (GeneralSecurityException e) {
                    throw new ConfigException(
                            SSL_KEY_PASSWORD + ": cannot read the private key of " + keyLocation + ": " + e.getMessage());
                }
            }
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(keys == null ? null : keys.getKeyManagers(), trust == null ? null : trust.getTrustManagers(), null);
            return context;
        } catch (GeneralSecurityException e) {
            throw new ConfigException("cannot set up TLS for the schema registry: " + e.getMessage());
        }
    }

    private static KeyStore load(String location, String setting, String type, char[] password) {
        KeyStore store;
        try {
            store = KeyStore.getInstance(type);
        } catch (KeyStoreException e) {
            throw new ConfigException(setting.replace("location", "type"), type,
                    "not a key store type this JVM knows (JKS, PKCS12)");
        }
        try (InputStream in = Files.newInputStream(Path.of(location))) {
            store.load(in, password);
        } catch (IOException | GeneralSecurityException e) {
            throw new ConfigException(setting, location, "cannot read it as a " + type + " store: " + e.getMessage());
        }
        return store;
    }

    private static char[] password(Map<String, ?> configs, String name) {
        Object value = configs.get(name);
        if (value == null) {
            return null;
        }
        // Kafka's Password type prints as [hidden]; its value() is the secret.
        if (value instanceof Password secret) {
            return secret.value().toCharArray();
        }
        return value.toString().toCharArray();
    }

    private static boolean blank(Object value) {
        return value == null || value.toString().isBlank();
    }
}
