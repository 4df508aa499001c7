package dev.fencedwrites.producer;

import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.testing.GeneratedReference;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * {@code docs/reference/etcd-settings.md} is generated from {@link EtcdSettings#DEFINITIONS}, the {@code etcd.*} keys
 * producer-lib reads (the enforcer defines its own from the same list). Regenerate with
 * {@code mvn -pl producer-lib test -Dtest=EtcdSettingsReferenceTest -Ddocs.reference.update=true}.
 */
class EtcdSettingsReferenceTest {
    static final Path FILE = Path.of("../docs/reference/etcd-settings.md");

    @Test
    void checkedInEtcdSettingsReferenceMatchesTheDefinitions() {
        GeneratedReference.assertUpToDate(render(), FILE, "producer-lib", "EtcdSettingsReferenceTest");
    }

    static String render() {
        StringBuilder page = new StringBuilder("""
                # etcd settings

                Generated from `%s.DEFINITIONS`; do not edit by hand.

                The `etcd.*` keys producer-lib's `EtcdSettings.load(file, environment)` reads, each also settable as the
                environment variable `FENCE_` + the key in upper case with `_` for `.` (`FENCE_ETCD_ENDPOINTS`), which wins
                over the file. [etcd settings](../user/producer-lib.md#etcd-settings) says how they are loaded. The enforcer
                reads the same keys and variables for token verification, with its own defaults where its
                [reference](../../fence-enforcer-streams/CONFIGURATION.rst) says so.

                | key | variable | default | meaning |
                |---|---|---|---|
                """.formatted(EtcdSettings.class.getName()));
        for (EtcdSettings.Definition setting : EtcdSettings.DEFINITIONS) {
            String defaultValue = setting.required()
                    ? "(required)"
                    : setting.defaultValue() == null ? "none" : "`" + setting.defaultValue() + "`";
            page.append("| `%s` | `%s` | %s | %s |%n".formatted(setting.key(), EtcdSettings.environmentName(setting.key()),
                    defaultValue, setting.documentation()));
        }
        return page.toString();
    }
}
