package dev.fencedwrites.devtools;

import dev.fencedwrites.devtools.chaos.WriterFleet;
import dev.fencedwrites.services.EtcdNode;
import dev.fencedwrites.services.NetworkLinks;
import dev.fencedwrites.services.Tools;
import org.opentest4j.TestAbortedException;

/**
 * The programs a test's child {@code fence up} or {@code fence chaos} needs, checked in the test's own JVM first: a
 * missing one throws {@code MissingToolException} here, which skips the test by name (test-support's MissingToolSkips),
 * where the child would only fail.
 */
final class StackTools {
    private StackTools() {
    }

    /** etcd, which every stack runs. */
    static void requireStack() {
        EtcdNode.binary();
    }

    /** The stack's, and kcat (the inject fault) and libfaketime (skewed writers). */
    /**
     * Fails (with {@code fence.tools.required}) or skips the test, naming the reason, when this machine cannot cut links
     * ({@link NetworkLinks#unavailable()}: not root, no iptables).
     */
    static void requireNetworkFaults() {
        NetworkLinks.unavailable().ifPresent(reason -> {
            if (Boolean.getBoolean("fence.tools.required")) {
                throw new IllegalStateException(reason);
            }
            throw new TestAbortedException("skipped: " + reason);
        });
    }

    static void requireChaos() {
        requireStack();
        Tools.require("kcat", "apt-get install -y kcat");
        Tools.requireFile(WriterFleet.LIBFAKETIME, "libfaketime", "apt-get install -y faketime");
    }
}
