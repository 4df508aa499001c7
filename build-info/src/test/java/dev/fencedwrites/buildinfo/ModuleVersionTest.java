package dev.fencedwrites.buildinfo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** A module's reported version is the one its build filtered in, and a build without filtering is named, not hidden. */
class ModuleVersionTest {
    @Test
    void theFilteredVersionIsReturned() {
        assertThat(ModuleVersion.read(ModuleVersionTest.class, "filtered.properties", "build-info")).isEqualTo("1.2.3");
    }

    @Test
    void anUnfilteredPlaceholderIsRefusedNamingTheModule() {
        assertThatThrownBy(() -> ModuleVersion.read(ModuleVersionTest.class, "unfiltered.properties", "build-info"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("unfiltered.properties has no filtered version (${project.version})")
                .hasMessageContaining("build build-info with Maven");
    }

    @Test
    void aMissingResourceIsRefusedNamingIt() {
        assertThatThrownBy(() -> ModuleVersion.read(ModuleVersionTest.class, "absent.properties", "sink-connector"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("absent.properties is not on the class path; build sink-connector with Maven");
    }
}
