package dev.fencedwrites.devtools;

import dev.fencedwrites.cli.FenceMain;
import dev.fencedwrites.testing.GeneratedReference;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Model.PositionalParamSpec;

/**
 * {@code docs/reference/cli.md} is generated from the picocli model of {@link DevMain#commandLine()}: every command,
 * option and parameter with its description and default, and which commands the distribution's {@code bin/fence}
 * ({@link FenceMain#commandLine()}) leaves out. Regenerate with
 * {@code ./mvnw -pl dev-tools test -Dtest=CliReferenceTest -Ddocs.reference.update=true}.
 */
class CliReferenceTest {
    static final Path FILE = Path.of("../docs/reference/cli.md");

    @Test
    void checkedInCliReferenceMatchesTheCommandLine() {
        GeneratedReference.assertUpToDate(render(), FILE, "dev-tools", "CliReferenceTest");
    }

    static String render() {
        CommandLine root = DevMain.commandLine();
        Set<String> shipped = FenceMain.commandLine().getSubcommands().keySet();
        StringBuilder page = new StringBuilder(
                """
                        # CLI reference

                        Generated from the picocli model of `%s`; do not edit by hand. `./fence COMMAND --help`
                        prints the same. [The CLI](../tools/cli.md) explains how the commands fit together; `./fence test`,
                        `./fence test-failover`, `./fence bench` and `./fence kafka-configs` are the launcher's own
                        ([testing](../dev/testing.md), [benchmarks](../dev/benchmarks.md)). The distribution's `bin/fence`
                        (`%s`) runs every command here but those marked *checkout only*.

                        """.formatted(DevMain.class.getName(), FenceMain.class.getName()));
        page.append(command(root.getCommandSpec(), "fence", true));
        root.getSubcommands().forEach((name, sub) -> {
            if (!name.equals("help")) {
                page.append(command(sub.getCommandSpec(), "fence " + name, shipped.contains(name)));
            }
        });
        return page.toString();
    }

    private static String command(CommandSpec spec, String title, boolean shipped) {
        StringBuilder text = new StringBuilder("## `").append(title).append("`\n\n");
        if (!shipped) {
            text.append("*Checkout only* (`./fence`, dev-tools): one of the local stack's commands, which the distribution "
                    + "leaves out.\n\n");
        }
        text.append(String.join(" ", spec.usageMessage().description()).replace("%n", " ").trim()).append("\n\n");
        List<OptionSpec> options = spec.options().stream().filter(o -> !o.inherited() || title.equals("fence")).toList();
        List<OptionSpec> inherited = spec.options().stream().filter(o -> o.inherited() && !title.equals("fence")).toList();
        if (!spec.positionalParameters().isEmpty() || !options.isEmpty()) {
            text.append("| option | description | default |\n|---|---|---|\n");
            for (PositionalParamSpec parameter : spec.positionalParameters()) {
                text.append("| `").append(parameter.paramLabel()).append("` | ").append(description(parameter)).append(" | ")
                        .append(defaultValue(parameter)).append(" |\n");
            }
            for (OptionSpec option : options) {
                String separator = option.longestName().length() == 2 ? " " : "="; // -X key=value, --since=TIME
                String label = option.typeInfo().isBoolean() ? "" : separator + option.paramLabel();
                text.append("| `").append(String.join("`, `", option.names())).append(label).append("` | ")
                        .append(description(option)).append(" | ").append(defaultValue(option)).append(" |\n");
            }
            text.append('\n');
        }
        if (!inherited.isEmpty()) {
            text.append("Also takes the shared options ").append(inherited.stream().map(o -> "`" + o.longestName() + "`")
                    .collect(Collectors.joining(", "))).append(" (see `fence`).\n\n");
        }
        String footer = String.join("\n", spec.usageMessage().footer()).replace("%n", "\n").strip();
        if (!footer.isEmpty()) {
            text.append("```text\n").append(footer).append("\n```\n\n");
        }
        return text.toString();
    }

    private static String description(ArgSpec arg) {
        return String.join(" ", arg.renderedDescription())
                .replace("%n", " ").replace("|", "\\|").strip();
    }

    private static String defaultValue(ArgSpec arg) {
        String value = arg.defaultValueString();
        boolean flag = arg instanceof OptionSpec option && option.typeInfo().isBoolean() && "false".equals(value);
        return flag || value == null || value.equals("null") || value.isEmpty() ? "" : "`" + value.replace("|", "\\|") + "`";
    }
}
