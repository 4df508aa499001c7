package dev.fencedwrites.testing;

import dev.fencedwrites.services.MissingToolException;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.LifecycleMethodExecutionExceptionHandler;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;
import org.opentest4j.TestAbortedException;

/**
 * A test that needs a program this machine does not have (a {@link MissingToolException} anywhere in its failure's
 * causes) is skipped, with the program and its install command as the reason, instead of failing: so {@code ./mvnw
 * verify} on a machine with only a JDK runs what it can and names what it skipped. With the system property
 * {@value #REQUIRED} set to {@code true} ({@code ./fence test} sets it, after {@code dev/setup test} installed
 * everything) a missing program fails the test as before.
 *
 * <p>Registered for every test by JUnit's extension auto-detection ({@code META-INF/services}; the parent pom turns
 * {@code junit.jupiter.extensions.autodetection.enabled} on for surefire and failsafe). Exceptions of a
 * {@code @BeforeAll} or {@code @BeforeEach} method, or of the test itself, are handled here; {@link ServiceExtension}
 * handles its own starts with {@link #skipIfMissing}.
 */
public final class MissingToolSkips implements TestExecutionExceptionHandler, LifecycleMethodExecutionExceptionHandler {
    /** The system property that turns the skip off: a missing program fails the test. */
    public static final String REQUIRED = "fence.tools.required";

    @Override
    public void handleTestExecutionException(ExtensionContext context, Throwable throwable) throws Throwable {
        throw skipIfMissing(throwable);
    }

    @Override
    public void handleBeforeAllMethodExecutionException(ExtensionContext context, Throwable throwable) throws Throwable {
        throw skipIfMissing(throwable);
    }

    @Override
    public void handleBeforeEachMethodExecutionException(ExtensionContext context, Throwable throwable) throws Throwable {
        throw skipIfMissing(throwable);
    }

    /**
     * {@code failure} itself, or a {@link TestAbortedException} naming the missing program when one of its causes is a
     * {@link MissingToolException} and {@value #REQUIRED} is not {@code true}.
     */
    public static Throwable skipIfMissing(Throwable failure) {
        if (Boolean.getBoolean(REQUIRED)) {
            return failure;
        }
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof MissingToolException missing) {
                return new TestAbortedException("skipped: " + missing.getMessage(), failure);
            }
        }
        return failure;
    }
}
