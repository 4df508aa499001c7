package dev.fencedwrites.testing;

import java.nio.file.Path;
import org.apache.kafka.common.config.ConfigDef;

/**
 * A checked-in configuration reference generated from a {@link ConfigDef} (Kafka's
 * {@code ConfigDef.toEnrichedRst()}, the habit of kafka-connect-jdbc): a module's test names its
 * definition and file, and this fails when the file is stale. With the system property
 * {@value #UPDATE_PROPERTY}{@code =true} it rewrites the file first.
 */
public final class ConfigReference {
    /** The system property that makes {@link #assertUpToDate} rewrite the file. */
    public static final String UPDATE_PROPERTY = "config.reference.update";

    private ConfigReference() {
    }

    /**
     * The reference's text: a title, a line naming {@code definitionName}, then {@code definition}'s
     * enriched reStructuredText.
     */
    public static String render(ConfigDef definition, String definitionName) {
        return "Configuration reference\n=======================\n\n"
                + "Generated from ``" + definitionName + "``; do not edit by hand.\n\n" + definition.toEnrichedRst();
    }

    /**
     * Asserts that {@code file} holds {@link #render(ConfigDef, String)}'s text byte for byte (rewriting it
     * first when {@value #UPDATE_PROPERTY} is set); the failure message says how to regenerate it.
     *
     * @param module the Maven module whose test this is, for the regeneration command
     * @param testClass the simple name of the calling test class, for the regeneration command
     */
    public static void assertUpToDate(ConfigDef definition, String definitionName, Path file, String module, String testClass) {
        GeneratedReference.assertUpToDate(render(definition, definitionName), file, module, testClass, UPDATE_PROPERTY);
    }
}
