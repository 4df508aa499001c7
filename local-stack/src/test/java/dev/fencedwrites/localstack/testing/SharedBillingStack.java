package dev.fencedwrites.localstack.testing;

import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.testing.SharedServiceExtension;
import java.nio.file.Path;

/**
 * The stack {@code ./fence up} starts (the billing sink, no unfenced copy), started once for every test class of a test
 * JVM that extends with it ({@code @ExtendWith(SharedBillingStack.class)}, the stack received by its {@code @BeforeAll})
 * and stopped when the run ends: a stack start is half of each such class's time. Its users: demo's
 * TokenVerificationIT and EtcdPauseIT, fence-cli's OperatorCommandsIT and HostileValuesIT, interop-tests'
 * ThirdPartyClientsIT and PythonWriterIT. Each class uses keys (and tables, connectors) of its own, reads only its own
 * records and takes metrics as differences. Shipped in local-stack's test jar (test-support cannot depend on local-stack:
 * local-stack's own tests use test-support).
 */
public final class SharedBillingStack extends SharedServiceExtension<LocalStack> {
    /** Called by JUnit, which instantiates the extension. */
    public SharedBillingStack() {
        super(LocalStack.class, "billing-stack");
    }

    @Override
    protected LocalStack start(Path dir) throws Exception {
        return LocalStack.builder(dir).connectors(BillingConnectors.set(false))
                .progress(line -> System.out.println("[stack] " + line)).start();
    }
}
