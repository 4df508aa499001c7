package dev.fencedwrites.contract;

import java.util.Arrays;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The one place that hides credentials in text meant for logs and error messages: the user info of a
 * URL ({@code https://user:password@host}) and the value of a {@code password} parameter in a URL's
 * query or a JDBC URL's properties ({@code ?user=sink&password=secret}, {@code ;password=secret}).
 * Each is replaced by {@code ***}; everything else is kept, so the message still names the host.
 *
 * <p>Rules (merged two earlier implementations into this one):
 * <ul>
 *   <li>User info: everything between {@code ://} and the <em>last</em> {@code @} of the URL, so
 *       credentials that hold an unescaped {@code @} or {@code /} are hidden whole (the schema
 *       registry client's rule). Password parameters are hidden first, so an {@code @} in one is
 *       no user info; an {@code @} elsewhere in a query hides the host too: too much is the safe side.</li>
 *   <li>{@code password=} parameters, the name matched case-insensitively, the value up to the next
 *       {@code &} or {@code ;} (the sink's rule; the demo's {@code inspect} matched only lower case
 *       and stopped at {@code &} alone, so {@code ;PASSWORD=x} leaked there).</li>
 * </ul>
 * Null is returned as is. Passwords held in settings of type {@code PASSWORD} are hidden by Kafka's
 * {@code ConfigDef} and need nothing from here.
 */
public final class Redaction {
    /** What replaces a hidden secret. */
    public static final String MASK = "***";

    private static final Pattern PASSWORD_PARAMETER = Pattern.compile("(?i)(password=)[^&;]*");

    private Redaction() {
    }

    /**
     * {@code url} with its user info and any {@code password} parameter replaced by {@value #MASK},
     * e.g. {@code https://***@registry:8081} or {@code jdbc:postgresql://h/db?user=u&password=***}.
     */
    public static String url(String url) {
        if (url == null) {
            return null;
        }
        String text = PASSWORD_PARAMETER.matcher(url).replaceAll("$1" + MASK);
        int scheme = text.indexOf("://");
        int at = text.lastIndexOf('@');
        if (scheme < 0 || at < scheme) {
            return text;
        }
        return text.substring(0, scheme + 3) + MASK + text.substring(at);
    }

    /**
     * A comma-separated list of URLs (as {@code schema.registry.url} takes them) with each URL
     * redacted by {@link #url(String)}; empty entries are kept.
     */
    public static String urlList(String urls) {
        if (urls == null) {
            return null;
        }
        return Arrays.stream(urls.split(",", -1)).map(Redaction::url).collect(Collectors.joining(","));
    }
}
