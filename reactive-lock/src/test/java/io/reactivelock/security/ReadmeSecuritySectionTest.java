package io.reactivelock.security;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The README's Security section quotes the ACL rule lines that {@link LeastPrivilegeTest} runs with. */
class ReadmeSecuritySectionTest {

    @Test
    void theReadmeShowsTheAclLinesTheLeastPrivilegeTestUses() throws IOException {
        // Surefire runs in the module directory; the README is the parent project's.
        String readme = Files.readString(Path.of("..", "README.md"));
        for (String rules : LockUser.README_LINES) {
            assertThat(readme).contains("ACL SETUSER " + LockUser.NAME + " on >password " + rules + "\n");
        }
        assertThat(readme.indexOf("## Security")).as("Security comes just before Benchmarks")
                .isPositive().isLessThan(readme.indexOf("## Benchmarks"));
    }
}
