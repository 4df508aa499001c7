package dev.fencedwrites.testing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.services.MissingToolException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.opentest4j.TestAbortedException;

/** A missing program anywhere in a failure's causes skips the test, naming it; any other failure stays a failure. */
class MissingToolSkipsTest {
    private static final MissingToolException MISSING = new MissingToolException("kcat", "apt-get install -y kcat");

    /** ./fence test runs this with fence.tools.required=true: each test sets what it needs and the original comes back. */
    private final String required = System.getProperty(MissingToolSkips.REQUIRED);

    @AfterEach
    void restoreRequired() {
        if (required == null) {
            System.clearProperty(MissingToolSkips.REQUIRED);
        } else {
            System.setProperty(MissingToolSkips.REQUIRED, required);
        }
    }

    @Test
    void aMissingProgramInTheCausesSkipsNamingItAndItsInstallCommand() {
        System.setProperty(MissingToolSkips.REQUIRED, "false");
        Throwable wrapped = new ExecutionException(new IllegalStateException("chaos could not start", MISSING));

        Throwable outcome = MissingToolSkips.skipIfMissing(wrapped);

        assertThat(outcome).isInstanceOf(TestAbortedException.class).hasCause(wrapped)
                .hasMessage("skipped: kcat not found: install it with apt-get install -y kcat, or with dev/setup, which "
                        + "installs every tool the tests use");
    }

    @Test
    void anyOtherFailureStaysAFailure() {
        System.setProperty(MissingToolSkips.REQUIRED, "false");
        Throwable other = new UncheckedIOException(new IOException("connection refused"));

        assertThat(MissingToolSkips.skipIfMissing(other)).isSameAs(other);
        assertThat(MissingToolSkips.skipIfMissing(new AssertionError("expected 3 rows"))).isInstanceOf(AssertionError.class);
    }

    @Test
    void withToolsRequiredAMissingProgramFailsTheTest() {
        System.setProperty(MissingToolSkips.REQUIRED, "true");

        assertThat(MissingToolSkips.skipIfMissing(MISSING)).isSameAs(MISSING);
    }
}
