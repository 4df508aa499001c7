package dev.fencedwrites.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * One real service as a JUnit 5 extension, registered with {@code @RegisterExtension}: on a {@code static} field it
 * starts once before the class's first test and stops after its last; on an instance field it starts before and
 * stops after each test (the lifecycle of jetcd's {@code EtcdClusterExtension}). Each start gets a fresh directory
 * under {@code java.io.tmpdir} for the service's data and log, deleted after the stop.
 *
 * @param <S> the started service
 */
public abstract class ServiceExtension<S extends AutoCloseable>
        implements
            BeforeAllCallback,
            AfterAllCallback,
            BeforeEachCallback,
            AfterEachCallback {
    private final String name;
    private boolean perClass;
    private S service;
    private Path dir;

    ServiceExtension(String name) {
        this.name = name;
    }

    /** Starts the service with its data and log in {@code dir} and returns once it answers. */
    abstract S start(Path dir) throws Exception;

    /** Releases what the extension made on top of the service (clients), before the service stops. */
    void beforeStop() {
    }

    @Override
    public final void beforeAll(ExtensionContext context) throws Exception {
        perClass = true;
        startOnce();
    }

    @Override
    public final void beforeEach(ExtensionContext context) throws Exception {
        startOnce();
    }

    @Override
    public final void afterEach(ExtensionContext context) throws Exception {
        if (!perClass) {
            stop();
        }
    }

    @Override
    public final void afterAll(ExtensionContext context) throws Exception {
        perClass = false;
        stop();
    }

    /** Starts the service unless it runs; for an extension whose service needs this one first. */
    final void ensureStarted() throws Exception {
        startOnce();
    }

    private synchronized void startOnce() throws Exception {
        if (service == null) {
            dir = Files.createTempDirectory("fenced-writes-" + name + "-");
            try {
                service = start(dir);
            } catch (Exception e) {
                Throwable skip = MissingToolSkips.skipIfMissing(e);
                if (skip instanceof RuntimeException unchecked) {
                    throw unchecked;
                }
                throw e;
            }
        }
    }

    private synchronized void stop() throws Exception {
        if (service == null) {
            return;
        }
        try {
            beforeStop();
        } finally {
            try {
                service.close();
            } finally {
                service = null;
                deleteRecursively(dir);
            }
        }
    }

    /**
     * The running service.
     *
     * @throws IllegalStateException if the extension is not started (not registered, or used outside a test)
     */
    public final synchronized S service() {
        if (service == null) {
            throw new IllegalStateException(name + " is not running: register the extension with @RegisterExtension"
                    + " and use it from a test or a @BeforeAll/@BeforeEach that runs after it");
        }
        return service;
    }

    /** The directory the running service keeps its data and log in. */
    public final synchronized Path dir() {
        service();
        return dir;
    }

    /** Deletes {@code root} and everything below it, if it exists; also used by {@link SharedServiceExtension}. */
    static void deleteRecursively(Path root) {
        if (root == null || !Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete " + root, e);
        }
    }
}
