package dev.fencedwrites.enforcer;

import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.testing.GeneratedReference;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code docs/reference/etcd-settings.md} is generated from {@link EtcdSettings#DEFINITIONS}, the {@code etcd.*} keys
 * producer-lib reads, with the enforcer's defaults from {@link FenceEnforcerConfig#DEFINITION}, which is built from the
 * same list. Regenerate with
 * {@code mvn -pl fence-enforcer-streams test -Dtest=EtcdSettingsReferenceTest -Ddocs.reference.update=true}.
 */
class EtcdSettingsReferenceTest {
    static final Path FILE = Path.of("../docs/reference/etcd-settings.md");

    @Test
    void checkedInEtcdSettingsReferenceMatchesTheDefinitions() {
        GeneratedReference.assertUpToDate(render(), FILE, "fence-enforcer-streams", "EtcdSettingsReferenceTest");
    }

    static String render() {
        StringBuilder page = new StringBuilder("""
                # etcd settings

                Generated from `%s.DEFINITIONS`; do not edit by hand.

                The `etcd.*` keys that `EtcdSettings.load(file, environment)` (etcd-lock, which producer-lib brings) reads,
                each also settable as the environment variable `FENCE_` + the key in upper case with `_` for `.`
                (`FENCE_ETCD_ENDPOINTS`), which wins over the file. [etcd settings](../user/producer-lib.md#etcd-settings)
                says how they are loaded. The enforcer reads the same keys and variables for token verification, with the
                defaults of the fourth column (its [reference](../../fence-enforcer-streams/CONFIGURATION.rst) says why).

                | key | variable | default | the enforcer's default | meaning |
                |---|---|---|---|---|
                """.formatted(EtcdSettings.class.getName()));
        for (EtcdSettings.Definition setting : EtcdSettings.DEFINITIONS) {
            String defaultValue = setting.required()
                    ? "(required)"
                    : setting.defaultValue() == null ? "none" : "`" + setting.defaultValue() + "`";
            Object enforcer = FenceEnforcerConfig.DEFINITION.configKeys().get(setting.key()).defaultValue;
            String enforcerDefault = enforcer == null
                    ? "none"
                    : enforcer instanceof List<?> list
                            ? (list.isEmpty() ? "none (required unless token.verification.enable=false)" : "`" + list + "`")
                            : "`" + enforcer + "`";
            page.append("| `%s` | `%s` | %s | %s | %s |%n".formatted(setting.key(), EtcdSettings.environmentName(setting.key()),
                    defaultValue, enforcerDefault.equals(defaultValue) ? "the same" : enforcerDefault,
                    setting.documentation()));
        }
        return page.toString();
    }
}
