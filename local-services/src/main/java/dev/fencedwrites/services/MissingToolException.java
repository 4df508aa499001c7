package dev.fencedwrites.services;

/**
 * A program a service or a test runs is not installed: names the program and the command that installs it. The tests'
 * extension (test-support's {@code MissingToolSkips}) turns it into a skipped test unless {@code fence.tools.required}
 * is {@code true}, as {@code ./fence test} sets it.
 */
public final class MissingToolException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    private final String tool;

    /**
     * @param tool    the program (or library, package) that is missing, e.g. {@code etcd}
     * @param install how to install it, e.g. {@code apt-get install -y etcd-server etcd-client}
     */
    public MissingToolException(String tool, String install) {
        super(tool + " not found: install it with " + install + ", or with dev/setup, which installs every tool the tests use");
        this.tool = tool;
    }

    /** The missing program. */
    public String tool() {
        return tool;
    }
}
