package dev.fencedwrites.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A checked-in page generated from the code (the CLI, metrics and reasons references under {@code docs/reference/}):
 * a test renders the page and this fails when the file differs. With the system property {@value #UPDATE_PROPERTY}
 * {@code =true} it rewrites the file first.
 */
public final class GeneratedReference {
    /** The system property that makes {@link #assertUpToDate} rewrite the file. */
    public static final String UPDATE_PROPERTY = "docs.reference.update";

    private GeneratedReference() {
    }

    /**
     * Asserts that {@code file} holds {@code generated} byte for byte, rewriting it first when {@value #UPDATE_PROPERTY}
     * is set; the failure message gives the command that regenerates it.
     *
     * @param module the Maven module whose test this is
     * @param testClass the simple name of the calling test class
     */
    public static void assertUpToDate(String generated, Path file, String module, String testClass) {
        assertUpToDate(generated, file, module, testClass, UPDATE_PROPERTY);
    }

    /** As {@link #assertUpToDate(String, Path, String, String)}, rewriting the file when {@code updateProperty} is set. */
    static void assertUpToDate(String generated, Path file, String module, String testClass, String updateProperty) {
        String howToFix = "%s is stale; regenerate it: mvn -pl " + module + " test -Dtest=" + testClass + " -D"
                + updateProperty + "=true";
        try {
            if (Boolean.getBoolean(updateProperty)) {
                Files.createDirectories(file.toAbsolutePath().getParent());
                Files.writeString(file, generated);
            }
            assertThat(file).as(howToFix, file.toAbsolutePath().normalize()).exists();
            assertThat(Files.readString(file)).as(howToFix, file.toAbsolutePath().normalize()).isEqualTo(generated);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read or write " + file.toAbsolutePath(), e);
        }
    }
}
