package dev.fencedwrites.services;

/**
 * A started, ready service: its process and the address clients use.
 *
 * @param process the service's process
 * @param address where it answers: a URL, or host:port for Kafka
 */
public record Service(ChildProcess process, String address) implements AutoCloseable {
    @Override
    public void close() {
        process.close();
    }
}
