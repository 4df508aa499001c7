package dev.fencedwrites.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

/**
 * Checks that an archive which bundles third-party jars (the release tar.gz, the sink's Connect component) carries what
 * their licences ask of a redistribution: the NOTICE file of every bundled jar that ships one (section 4(d) of the Apache
 * License 2.0), and a {@code licenses/README.txt} listing every bundled library with its licence and the file of every
 * licence other than the Apache License 2.0. The listing has one line per library, its columns separated by two or more
 * spaces: artifact, licence, licence file (relative to {@code licenses/}, {@code ../LICENSE} for Apache-2.0).
 */
public final class BundledLicences {
    private static final Pattern JAR = Pattern.compile("(.+?)-\\d[^/]*\\.jar");
    private static final String NOTICE_ENTRY = "(?i)(META-INF/)?NOTICE(\\.txt|\\.md)?";

    private BundledLicences() {
    }

    /**
     * Asserts that {@code notice} contains (whitespace aside) the text of every NOTICE entry of every jar in {@code lib}.
     *
     * @return how many NOTICE entries were found and carried
     */
    public static int assertNoticeCarriesEveryBundledNotice(Path lib, Path notice) throws IOException {
        String carriedText = normalized(Files.readString(notice, StandardCharsets.UTF_8));
        List<String> missing = new ArrayList<>();
        int carried = 0;
        for (String jar : jars(lib)) {
            try (ZipFile zip = new ZipFile(lib.resolve(jar).toFile())) {
                for (ZipEntry entry : zip.stream().filter(e -> e.getName().matches(NOTICE_ENTRY)).toList()) {
                    String text = normalized(new String(zip.getInputStream(entry).readAllBytes(), StandardCharsets.UTF_8));
                    if (carriedText.contains(text)) {
                        carried++;
                    } else {
                        missing.add(jar + "!/" + entry.getName());
                    }
                }
            }
        }
        assertThat(missing).as("NOTICE files not in %s: add their text under a 'Bundled:' line", notice).isEmpty();
        return carried;
    }

    /**
     * Asserts that {@code licenses/README.txt} lists exactly the third-party jars of {@code lib} (those {@code own} does
     * not match), that every licence file it names exists, and that no library under another licence points at the
     * Apache License.
     */
    public static void assertEveryBundledLibraryIsListed(Path lib, Path licenses, Predicate<String> own) throws IOException {
        Map<String, String[]> listed = new HashMap<>();
        for (String line : Files.readString(licenses.resolve("README.txt"), StandardCharsets.UTF_8).lines().toList()) {
            String[] columns = line.split("\\s{2,}");
            if (columns.length == 3) {
                listed.put(columns[0], columns);
            }
        }
        List<String> bundled = jars(lib).stream().filter(own.negate()).map(BundledLicences::artifact).toList();
        assertThat(listed.keySet()).as("%s against %s", licenses.resolve("README.txt"), lib)
                .containsExactlyInAnyOrderElementsOf(bundled);
        listed.forEach((artifact, columns) -> {
            String file = columns[2].split(" ")[0];
            if (!file.equals("-")) {
                assertThat(licenses.resolve(file).normalize()).as("licence of %s", artifact).isRegularFile();
            }
            if (!columns[1].startsWith("Apache-2.0")) {
                assertThat(file).as("%s is under %s: its text belongs in licenses/", artifact, columns[1])
                        .isNotEqualTo("../LICENSE");
            }
        });
    }

    /** The jar file names in {@code lib}, sorted; fails on anything else there. */
    public static List<String> jars(Path lib) throws IOException {
        try (Stream<Path> files = Files.list(lib)) {
            List<String> jars = files.map(p -> p.getFileName().toString()).sorted().toList();
            assertThat(jars).allSatisfy(name -> assertThat(name).endsWith(".jar"));
            return jars;
        }
    }

    /** The artifact id of a jar named {@code <artifact>-<version>[-classifier].jar}. */
    public static String artifact(String jar) {
        Matcher m = JAR.matcher(jar);
        assertThat(m.matches()).as("a versioned jar name: %s", jar).isTrue();
        return m.group(1);
    }

    private static String normalized(String text) {
        return text.replace("\r\n", "\n").replaceAll("\\s+", " ").strip();
    }
}
