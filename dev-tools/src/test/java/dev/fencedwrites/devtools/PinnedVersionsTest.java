package dev.fencedwrites.devtools;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * The poms without the parent repeat some of its versions: the oldest-version fixtures in compat/ (so that the parent's
 * dependency management cannot reach them) and the standalone example worker (built as a user builds it). Each copy must
 * equal the parent's value, or a version bump would leave it behind without a word.
 */
class PinnedVersionsTest {
    private static final Path ROOT = DocsCheckTest.ROOT;

    @Test
    void theCompatFixturesAreThisVersionOfTheProjectAndPinTheOldestKafka() throws Exception {
        Document parent = pom(ROOT.resolve("pom.xml"));
        String oldest = property(parent, "kafka.oldest.version");
        assertThat(oldest).matches("\\d+\\.\\d+\\.\\d+");
        for (List<String> fixture : List.of(List.of("compat/connect-runtime", "connect.runtime.version"),
                List.of("compat/kafka-broker", "kafka.broker.version"))) {
            Document pom = pom(ROOT.resolve(fixture.get(0)).resolve("pom.xml"));
            assertThat(child(pom.getDocumentElement(), "version")).as("%s's version", fixture.get(0))
                    .isEqualTo(child(parent.getDocumentElement(), "version"));
            assertThat(property(pom, fixture.get(1))).as("%s's %s", fixture.get(0), fixture.get(1)).isEqualTo(oldest);
            assertThat(property(pom, "log4j.version")).as("%s's log4j.version", fixture.get(0))
                    .isEqualTo(property(parent, "log4j.version"));
        }
    }

    @Test
    void theExampleWorkerPinsWhatTheLibrariesWereBuiltWith() throws Exception {
        Document parent = pom(ROOT.resolve("pom.xml"));
        Document example = pom(ROOT.resolve("examples/worker/pom.xml"));
        assertThat(property(example, "fenced-writes.version")).isEqualTo(child(parent.getDocumentElement(), "version"));
        for (String version : List.of("kafka.version", "netty.version", "jackson.version", "micrometer.version",
                "log4j.version")) {
            assertThat(property(example, version)).as("examples/worker/pom.xml's %s", version)
                    .isEqualTo(property(parent, version));
        }
    }

    private static Document pom(Path file) throws Exception {
        return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(file.toFile());
    }

    private static String property(Document pom, String name) {
        Element properties = (Element) pom.getDocumentElement().getElementsByTagName("properties").item(0);
        return child(properties, name);
    }

    /** The text of {@code parent}'s direct child named {@code name}, or {@code null}. */
    private static String child(Element parent, String name) {
        for (Node node = parent.getFirstChild(); node != null; node = node.getNextSibling()) {
            if (node instanceof Element element && element.getTagName().equals(name)) {
                return element.getTextContent().strip();
            }
        }
        return null;
    }
}
