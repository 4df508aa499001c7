package dev.fencedwrites.enforcer;

import dev.fencedwrites.services.KafkaBroker;
import dev.fencedwrites.services.Log4j2Config;
import dev.fencedwrites.services.Service;
import dev.fencedwrites.testing.SharedServiceExtension;
import java.nio.file.Path;

/**
 * One plain broker (what {@code KafkaBrokerExtension} starts) for EnforcerStartupIT, EnforcerOversizedRecordIT and
 * EnforcerHostileKeyVerificationIT, stopped when the run ends: a broker start is a good part of each class's time (issue
 * 17). Each class names its own topics and application ids ({@code <prefix>-in}, {@code <prefix>-enforcer}), so none
 * sees another's records or consumer group.
 */
final class SharedKafkaBroker extends SharedServiceExtension<SharedKafkaBroker.Broker> {
    /**
     * The running broker and the log4j2 configuration it runs with (INFO, Kafka at WARN), for the enforcers started next to it.
     */
    record Broker(Service service, Path log4j2) implements AutoCloseable {
        @Override
        public void close() {
            service.close();
        }
    }

    SharedKafkaBroker() {
        super(Broker.class, "kafka");
    }

    @Override
    protected Broker start(Path dir) throws Exception {
        Path log4j2 = Log4j2Config.write(dir.resolve("log4j2.properties"), "INFO");
        return new Broker(KafkaBroker.start(dir.resolve("kafka"), log4j2), log4j2);
    }
}
