package dev.fencedwrites.devtools;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.avro.AvroSerdeConfig;
import dev.fencedwrites.enforcer.FenceEnforcerConfig;
import dev.fencedwrites.sink.FencedJdbcSinkConfig;
import dev.fencedwrites.testing.GeneratedReference;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.connect.runtime.SinkConnectorConfig;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/**
 * The documentation agrees with the repository: every relative link and anchor in the README, {@code docs/}, the
 * changelog and the module READMEs resolves; every {@code ./fence COMMAND --option} shown exists in the CLI model; every
 * enforcer or sink setting named exists in a definition; code excerpts equal the compiled example code they name; no
 * page and no source (main or test) cites an issue number, which a reader of the repository cannot follow. Anchors are
 * GitHub's: the heading in lower case, punctuation but {@code -} and {@code _} dropped, spaces as {@code -}.
 */
class DocsCheckTest {
    static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Pattern LINK = Pattern.compile("\\[[^\\]]*]\\(([^)\\s]+)\\)");
    /**
     * A command line in code: from {@code ./fence} (or the distribution's {@code bin/fence}) to the end of the span or line,
     * a comment or a shell operator.
     */
    private static final Pattern COMMAND = Pattern.compile("(?:\\./|\\bbin/)fence((?: [^`\\n#|;&)]*)?)");
    private static final Pattern FENCED_BLOCK = Pattern.compile("(?s)```([a-z]*)\\n(.*?)```");
    private static final Pattern CODE_SPAN = Pattern.compile("`([^`\\n]+)`");
    /** A setting's name as the docs write it in code: dotted lower-case words, maybe with {@code =value}. */
    private static final Pattern SETTING = Pattern.compile("[a-z][a-z0-9]*(\\.[a-z0-9-]+)+");
    /**
     * Not settings of a definition: header names ({@code fence.token}), the pass-through prefixes ({@code streams.*}, the
     * registry client's {@code schema.registry.*}), the docs' notations ({@code token.seq}, {@code schema.table}), file
     * names and method calls.
     */
    private static final Pattern NOT_A_SETTING = Pattern.compile("fence\\.(?!guard\\.|marker\\.pending).*|streams\\..*"
            + "|schema\\.registry\\..*|token\\.(seq|[0-9]+)|schema\\.table|.*\\.(js|py|java|md|sh|json|ya?ml|properties|avsc)");
    private static final Pattern ISSUE = Pattern.compile("\\b[Ii]ssues? #?[0-9]+");
    private static final Pattern SNIPPET = Pattern.compile("<!-- snippet: ([^#\\s]+)#([a-z-]+) -->\\n```[a-z]*\\n(.*?)```",
            Pattern.DOTALL);
    /** The launcher's own commands ({@code fence} runs them itself) and the enforcer, which passes its arguments on. */
    private static final Set<String> UNCHECKED_OPTIONS = Set.of("test", "test-failover", "bench", "kafka-configs", "enforcer");

    @Test
    void everyRelativeLinkAndAnchorResolves() {
        List<String> broken = new ArrayList<>();
        for (Path page : pages()) {
            Matcher link = LINK.matcher(withoutCode(read(page)));
            while (link.find()) {
                String problem = brokenLink(page, link.group(1));
                if (problem != null) {
                    broken.add(ROOT.relativize(page) + ": " + link.group(1) + " (" + problem + ")");
                }
            }
        }
        assertThat(broken).as("broken links").isEmpty();
    }

    @Test
    void everyPageClosesTheCodeBlocksItOpens() {
        List<String> open = pages().stream().filter(page -> read(page).lines().filter(l -> l.startsWith("```")).count() % 2 != 0)
                .map(page -> ROOT.relativize(page).toString()).toList();
        assertThat(open).as("pages with a code fence left open (prose would read as code, code as prose)").isEmpty();
    }

    @Test
    void everyFenceCommandAndOptionShownExistsInTheCommandLine() {
        CommandLine root = DevMain.commandLine();
        List<String> unknown = new ArrayList<>();
        int commands = 0;
        for (Path page : pages()) {
            for (String code : code(read(page))) {
                Matcher command = COMMAND.matcher(code);
                while (command.find()) {
                    commands++;
                    String problem = unknownOption(root, command.group(1).strip().split("\\s+"));
                    if (problem != null) {
                        unknown.add(
                                ROOT.relativize(page) + ": ./fence" + command.group(1).stripTrailing() + " (" + problem + ")");
                    }
                }
            }
        }
        assertThat(commands).as("./fence command lines found").isGreaterThan(50);
        assertThat(unknown).as("commands or options the CLI does not have").isEmpty();
    }

    @Test
    void everySettingNamedExistsInTheEnforcerOrSinkDefinition() {
        Set<String> ours = new HashSet<>(FenceEnforcerConfig.DEFINITION.names());
        ours.addAll(FencedJdbcSinkConfig.DEFINITION.names());
        // A name is checked when its first word is one of our settings' first words (state.dirr, markers.topc, ...);
        // Kafka's, Connect's and the registry client's names that share a first word are known too.
        Set<String> firstWords = new HashSet<>();
        ours.forEach(name -> firstWords.add(name.split("\\.", 2)[0]));
        Set<String> known = new HashSet<>(ours);
        known.addAll(StreamsConfig.configDef().names());
        known.addAll(ConsumerConfig.configNames());
        known.addAll(ProducerConfig.configNames());
        known.addAll(SinkConnectorConfig.configDef().names());
        known.addAll(constants(TopicConfig.class));
        known.addAll(constants(AvroSerdeConfig.class));
        List<String> unknown = new ArrayList<>();
        for (Path page : pages()) {
            for (String code : code(read(page))) {
                for (String word : code.split("[\\s`'\",;]+")) {
                    if (word.contains("(")) {
                        continue; // a method call, etcd.endpoint()
                    }
                    String key = word.split("=", 2)[0];
                    if (SETTING.matcher(key).matches() && firstWords.contains(key.split("\\.", 2)[0])
                            && !NOT_A_SETTING.matcher(key).matches() && !known.contains(key) && !isPrefix(key, known)) {
                        unknown.add(ROOT.relativize(page) + ": " + key);
                    }
                }
            }
        }
        assertThat(unknown).as("settings named in the docs that no definition has").isEmpty();
    }

    @Test
    void codeExcerptsEqualTheExampleCodeTheyName() throws IOException {
        List<String> stale = new ArrayList<>();
        int excerpts = 0;
        for (Path page : pages()) {
            String text = read(page);
            Matcher snippet = SNIPPET.matcher(text);
            StringBuilder updated = new StringBuilder();
            while (snippet.find()) {
                excerpts++;
                String source = region(ROOT.resolve(snippet.group(1)), snippet.group(2));
                if (!snippet.group(3).equals(source)) {
                    stale.add(ROOT.relativize(page) + ": " + snippet.group(1) + "#" + snippet.group(2));
                }
                String fence = snippet.group().substring(0, snippet.start(3) - snippet.start());
                snippet.appendReplacement(updated, Matcher.quoteReplacement(fence + source + "```"));
            }
            snippet.appendTail(updated);
            if (Boolean.getBoolean(GeneratedReference.UPDATE_PROPERTY) && !updated.toString().equals(text)) {
                Files.writeString(page, updated.toString());
                stale.clear();
            }
        }
        assertThat(excerpts).as("excerpts found").isPositive();
        assertThat(stale).as("excerpts unlike their source; rewrite them: ./mvnw -pl dev-tools test -Dtest=DocsCheckTest -D"
                + GeneratedReference.UPDATE_PROPERTY + "=true").isEmpty();
    }

    @Test
    void noPageSourceTestSampleOrExampleCitesAnIssueNumber() throws IOException {
        List<Path> files = new ArrayList<>(pages());
        try (Stream<Path> sources = Files.walk(ROOT)) {
            sources.filter(p -> Files.isRegularFile(p) && !excluded(p)
                    && (p.toString().endsWith(".java") && p.toString().contains("/src/")
                            || p.toString().endsWith(".py") && p.toString().contains("/src/")
                            || ROOT.relativize(p).startsWith("config") || ROOT.relativize(p).startsWith("build-tools")
                            || ROOT.relativize(p).startsWith("examples") && p.toString().matches(".*\\.(py|js|java)")))
                    .forEach(files::add);
            files.add(ROOT.resolve("fence"));
        }
        List<String> cited = new ArrayList<>();
        for (Path file : files) {
            Matcher issue = ISSUE.matcher(read(file));
            while (issue.find()) {
                cited.add(ROOT.relativize(file) + ": " + issue.group());
            }
        }
        assertThat(cited).as("issue numbers cited").isEmpty();
    }

    /** The README, the changelog, docs/ and every module's and example's README. */
    static List<Path> pages() {
        try (Stream<Path> files = Files.walk(ROOT)) {
            return files.filter(p -> p.toString().endsWith(".md") && !excluded(p))
                    .filter(p -> !ROOT.relativize(p).startsWith("bench/results") && !ROOT.relativize(p).startsWith(".fence"))
                    .sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static boolean excluded(Path path) {
        String relative = ROOT.relativize(path).toString();
        return relative.contains("node_modules") || relative.contains("/target/") || relative.startsWith("target/")
                || relative.startsWith(".") || relative.startsWith("chaos-runs/");
    }

    private static String brokenLink(Path page, String url) {
        if (url.matches("^[a-z]+:.*")) {
            return null;
        }
        int hash = url.indexOf('#');
        String path = hash < 0 ? url : url.substring(0, hash);
        Path target = path.isEmpty() ? page : page.getParent().resolve(path).normalize();
        if (!Files.exists(target)) {
            return "no such file";
        }
        if (hash < 0 || !target.toString().endsWith(".md")) {
            return null;
        }
        return anchors(target).contains(url.substring(hash + 1)) ? null : "no such heading in " + ROOT.relativize(target);
    }

    /** GitHub's anchors of a page's headings (outside code blocks). */
    static Set<String> anchors(Path page) {
        Set<String> anchors = new HashSet<>();
        boolean inCode = false;
        for (String line : read(page).split("\n")) {
            if (line.startsWith("```")) {
                inCode = !inCode;
            } else if (!inCode && line.matches("^#{1,6} .*")) {
                anchors.add(line.replaceFirst("^#+ ", "").strip().toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N} _-]", "")
                        .replace(' ', '-'));
            }
        }
        return anchors;
    }

    /**
     * What in {@code ./fence WORDS} the CLI does not have: options before the command are the root's, the first other word
     * names the command, and every later option must be the command's or the root's (the root's options are shared).
     */
    private static String unknownOption(CommandLine root, String[] words) {
        CommandSpec command = null;
        for (String word : words) {
            if (word.isEmpty() || word.startsWith("$") || word.startsWith("<") || word.startsWith("\"")
                    || word.startsWith("'")) {
                continue;
            }
            String option = word.split("=", 2)[0];
            if (option.startsWith("-") && option.length() > 1 && !option.matches("-[0-9].*")) {
                if (command != null && UNCHECKED_OPTIONS.contains(command.name())) {
                    continue;
                }
                // before the command, the root's options; after it, the command's own (it holds the shared ones it takes)
                if (command == null ? !has(root.getCommandSpec(), option) : !has(command, option)) {
                    return "no option " + option + (command == null ? "" : " for " + command.name());
                }
            } else if (command == null) {
                if (UNCHECKED_OPTIONS.contains(word)) {
                    command = CommandSpec.create().name(word);
                } else if (root.getSubcommands().containsKey(word)) {
                    command = root.getSubcommands().get(word).getCommandSpec();
                } else if (word.matches("[a-z][a-z-]*")) {
                    return "no command " + word;
                }
            }
        }
        return null;
    }

    /** The code of a page: its fenced blocks and its code spans. */
    private static List<String> code(String text) {
        List<String> code = new ArrayList<>();
        Matcher block = FENCED_BLOCK.matcher(text);
        while (block.find()) {
            if (!block.group(1).equals("text")) { // text blocks are prose in a fixed layout, such as a command's footer
                code.add(block.group(2));
            }
        }
        Matcher span = CODE_SPAN.matcher(text.replaceAll("(?s)```.*?```", ""));
        while (span.find()) {
            code.add(span.group(1));
        }
        return code;
    }

    private static boolean has(CommandSpec spec, String option) {
        return spec.findOption(option) != null || spec.optionsMap().containsKey(option);
    }

    /** The values of a class's public static String constants: the setting names Kafka's and our config classes declare. */
    private static Set<String> constants(Class<?> type) {
        Set<String> values = new HashSet<>();
        for (Field field : type.getFields()) {
            if (Modifier.isStatic(field.getModifiers()) && field.getType() == String.class) {
                try {
                    values.add((String) field.get(null));
                } catch (IllegalAccessException e) {
                    throw new AssertionError(e);
                }
            }
        }
        return values;
    }

    private static boolean isPrefix(String key, Set<String> known) {
        return known.stream().anyMatch(k -> k.startsWith(key + "."));
    }

    /** The lines between {@code tag::NAME[]} and {@code end::NAME[]} of a source file, their common indent removed. */
    static String region(Path source, String tag) {
        List<String> lines = List.of(read(source).split("\n", -1));
        int start = indexOf(lines, "tag::" + tag + "[]", source);
        int end = indexOf(lines, "end::" + tag + "[]", source);
        List<String> body = lines.subList(start + 1, end);
        int indent = body.stream().filter(l -> !l.isBlank()).mapToInt(l -> l.length() - l.stripLeading().length()).min()
                .orElse(0);
        StringBuilder text = new StringBuilder();
        body.forEach(l -> text.append(l.isBlank() ? "" : l.substring(indent)).append('\n'));
        return text.toString();
    }

    private static int indexOf(List<String> lines, String marker, Path source) {
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains(marker)) {
                return i;
            }
        }
        throw new AssertionError(source + " has no " + marker);
    }

    /** The text with fenced code blocks and code spans blanked, so that link syntax inside code is not a link. */
    private static String withoutCode(String text) {
        return text.replaceAll("(?s)```.*?```", "").replaceAll("`[^`\\n]*`", "");
    }

    static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
