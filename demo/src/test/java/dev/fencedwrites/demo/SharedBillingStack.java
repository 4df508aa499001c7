package dev.fencedwrites.demo;

import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.testing.SharedServiceExtension;
import java.nio.file.Path;

/**
 * The stack {@code ./fence up} starts (the billing sink, no unfenced copy), started once for TokenVerificationIT and
 * EtcdPauseIT and stopped when the run ends: a stack start is half of each class's time (issue 17). Both classes use
 * keys of their own, read only their own records and take metrics as differences.
 */
final class SharedBillingStack extends SharedServiceExtension<LocalStack> {
    SharedBillingStack() {
        super(LocalStack.class, "billing-stack");
    }

    @Override
    protected LocalStack start(Path dir) throws Exception {
        return LocalStack.builder(dir).connectors(BillingConnectors.set(false))
                .progress(line -> System.out.println("[stack] " + line)).start();
    }
}
