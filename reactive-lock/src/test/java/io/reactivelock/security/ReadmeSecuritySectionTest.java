package io.reactivelock.security;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The security page, docs/security.md, quotes the ACL rule lines that {@link LeastPrivilegeTest} runs
 * with, and the README sends its readers there.
 */
class ReadmeSecuritySectionTest {

    @Test
    void theSecurityPageShowsTheAclLinesTheLeastPrivilegeTestUses() throws IOException {
        // Surefire runs in the module directory; the docs are the parent project's.
        String page = Files.readString(Path.of("..", "docs", "security.md"));
        for (String rules : LockUser.README_LINES) {
            assertThat(page).contains("ACL SETUSER " + LockUser.NAME + " on >password " + rules + "\n");
        }
        assertThat(Files.readString(Path.of("..", "README.md"))).as("the README links the security page")
                .contains("(docs/security.md)");
    }
}
