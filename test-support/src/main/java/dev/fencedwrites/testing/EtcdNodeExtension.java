package dev.fencedwrites.testing;

import dev.fencedwrites.services.EtcdNode;
import dev.fencedwrites.services.Service;
import java.nio.file.Path;

/**
 * One real etcd member on loopback ({@link EtcdNode}) as a JUnit 5 extension; see {@link ServiceExtension} for its
 * lifecycle.
 *
 * <pre>{@code
 * @RegisterExtension
 * static final EtcdNodeExtension etcd = new EtcdNodeExtension();
 * ... Client.builder().endpoints(etcd.endpoint()).build() ...
 * }</pre>
 */
public final class EtcdNodeExtension extends ServiceExtension<Service> {
    /** An extension that starts a single plain-HTTP member. */
    public EtcdNodeExtension() {
        super("etcd");
    }

    @Override
    Service start(Path dir) throws Exception {
        return EtcdNode.start(dir);
    }

    /** The member's client URL, {@code http://127.0.0.1:PORT}. */
    public String endpoint() {
        return service().address();
    }
}
