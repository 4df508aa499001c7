package dev.fencedwrites.testing;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * One real service shared by every test class of a test JVM that asks for it, registered with {@code @ExtendWith} and
 * received as a parameter of the class's {@code @BeforeAll} method: the first class to ask starts it, the following
 * ones get the same instance, and it stops (its directory under {@code java.io.tmpdir} deleted) when the JUnit run
 * ends, through the root {@link ExtensionContext.Store}, which closes its {@link AutoCloseable} values. One start
 * for several classes is what keeps {@code ./fence test} inside its CI budget; the classes must then
 * assume nothing fresh: unique keys, counts of their own records, metrics as differences.
 *
 * <p>A subclass names the type and how to start it; its class name is the key in the store, so every class that
 * extends with the same subclass shares one service.
 *
 * @param <S> the started service
 */
public abstract class SharedServiceExtension<S extends AutoCloseable> implements ParameterResolver {
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(SharedServiceExtension.class);
    private final Class<S> type;
    private final String name;

    /**
     * @param type the parameter type this extension resolves
     * @param name the service's name, in its directory's name and in errors
     */
    protected SharedServiceExtension(Class<S> type, String name) {
        this.type = type;
        this.name = name;
    }

    /** Starts the service with its data and logs in {@code dir} and returns once it answers. */
    protected abstract S start(Path dir) throws Exception;

    @Override
    public final boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        return parameter.getParameter().getType() == type;
    }

    /**
     * The running service, started by the first class that asks. A start that fails fails that class and is forgotten,
     * so the next class tries again (as each did with a service of its own).
     */
    @Override
    public final S resolveParameter(ParameterContext parameter, ExtensionContext context) {
        ExtensionContext.Store store = context.getRoot().getStore(NAMESPACE);
        String key = getClass().getName();
        try {
            return type.cast(store.getOrComputeIfAbsent(key, k -> startRunning(), Running.class).service());
        } catch (RuntimeException e) {
            store.remove(key);
            throw e;
        }
    }

    private Running startRunning() {
        Path dir = null;
        try {
            dir = Files.createTempDirectory("fenced-writes-" + name + "-");
            return new Running(start(dir), dir);
        } catch (Exception e) {
            ServiceExtension.deleteRecursively(dir);
            throw new ParameterResolutionException("cannot start the shared " + name + ": " + e, e);
        }
    }

    /** The service and its directory; closed by the root store when the run ends. */
    private record Running(AutoCloseable service, Path dir) implements AutoCloseable {
        @Override
        public void close() throws Exception {
            try {
                service.close();
            } finally {
                ServiceExtension.deleteRecursively(dir);
            }
        }
    }
}
