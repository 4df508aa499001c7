package dev.fencedwrites.cli;

import java.time.Duration;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * picocli's converter for the commands' {@code DURATION} options ({@code @Option(converter = DurationConverter.class)}): a
 * count and a unit, {@code 500ms}, {@code 90s}, {@code 15m}, {@code 2h}, {@code 1d}, as kcat and the Kafka tools write
 * them. A bad value is a usage error (exit 2): {@code Invalid value for option '--ttl': '10x' is not a duration like 90s,
 * 15m, 2h or 1d}.
 */
public final class DurationConverter implements ITypeConverter<Duration> {
    private static final Pattern DURATION = Pattern.compile("(\\d+)(ms|s|m|h|d)");

    @Override
    public Duration convert(String text) {
        return parse(text).orElseThrow(
                () -> new TypeConversionException("'" + text + "' is not a duration like 90s, 15m, 2h or 1d"));
    }

    /**
     * Checks a lease TTL option: etcd grants leases in whole seconds (producer-lib rounds a fraction up), so less than 1s
     * is refused rather than silently made 1s.
     *
     * @throws IllegalArgumentException naming {@code option}, when {@code ttl} is under one second
     */
    public static Duration leaseTtl(String option, Duration ttl) {
        if (ttl.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new IllegalArgumentException(option + " must be at least 1s (etcd grants leases in whole seconds), got "
                    + format(ttl));
        }
        return ttl;
    }

    /** {@code duration} as these options write it, in its largest exact unit: {@code 2m}, {@code 90s}, {@code 500ms}. */
    public static String format(Duration duration) {
        long millis = duration.toMillis();
        if (millis == 0) {
            return "0s";
        }
        for (var unit : new Object[][]{{86_400_000L, "d"}, {3_600_000L, "h"}, {60_000L, "m"}, {1_000L, "s"}}) {
            long size = (Long) unit[0];
            if (millis % size == 0) {
                return millis / size + (String) unit[1];
            }
        }
        return millis + "ms";
    }

    /** {@code text} as a duration, or empty when it is none (for an option that also takes another form). */
    public static Optional<Duration> parse(String text) {
        Matcher m = DURATION.matcher(text.trim());
        if (!m.matches()) {
            return Optional.empty();
        }
        try {
            long n = Long.parseLong(m.group(1));
            return Optional.of(switch (m.group(2)) {
                case "ms" -> Duration.ofMillis(n);
                case "s" -> Duration.ofSeconds(n);
                case "m" -> Duration.ofMinutes(n);
                case "h" -> Duration.ofHours(n);
                default -> Duration.ofDays(n);
            });
        } catch (NumberFormatException | ArithmeticException tooLong) {
            return Optional.empty(); // more than a long holds, or more seconds than a Duration does
        }
    }
}
