package io.reactivelock;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.support.TestSources;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * The artifacts users get stay listed where they look for them: every published module of the
 * build (a jar not marked {@code maven.deploy.skip}) is managed by reactive-lock-bom, at the
 * build's version, and named in the "Artifacts" table of docs/getting-started.md, and the BOM manages
 * nothing else.
 */
class ArtifactsTest {

    @Test
    void theBomAndTheReadmeListEveryPublishedArtifact() throws Exception {
        Path repository = TestSources.repository();
        Element root = read(repository.resolve("pom.xml"));
        String version = text(root, "version");
        Set<String> published = new TreeSet<>();
        List<String> modules = new ArrayList<>();
        NodeList moduleNodes = root.getElementsByTagName("module");
        for (int i = 0; i < moduleNodes.getLength(); i++) {
            modules.add(moduleNodes.item(i).getTextContent().strip());
        }
        for (String module : modules) {
            Element pom = read(repository.resolve(module).resolve("pom.xml"));
            String packaging = text(pom, "packaging");
            if ((packaging == null || packaging.equals("jar")) && !"true".equals(property(pom, "maven.deploy.skip"))) {
                published.add(text(pom, "artifactId"));
            }
        }
        assertThat(published).as("published modules").contains("reactive-lock", "reactive-lock-test").hasSizeGreaterThan(4);

        Element bom = read(repository.resolve("reactive-lock/bom/pom.xml"));
        assertThat(text(bom, "version")).as("the BOM's version").isEqualTo(version);
        Set<String> managed = new TreeSet<>();
        NodeList dependencies = bom.getElementsByTagName("dependency");
        for (int i = 0; i < dependencies.getLength(); i++) {
            Element dependency = (Element) dependencies.item(i);
            assertThat(text(dependency, "groupId")).isEqualTo("io.reactivelock");
            assertThat(text(dependency, "version")).isEqualTo("${project.version}");
            managed.add(text(dependency, "artifactId"));
        }
        assertThat(managed).as("what reactive-lock-bom manages").isEqualTo(published);

        String page = Files.readString(repository.resolve("docs/getting-started.md"));
        int start = page.indexOf("\n## Artifacts\n");
        assertThat(start).as("the Artifacts section of docs/getting-started.md").isNotNegative();
        String section = page.substring(start, page.indexOf("\n## ", start + 1));
        Set<String> rows = new TreeSet<>();
        for (String line : section.lines().filter(l -> l.startsWith("| `")).toList()) {
            rows.add(line.substring(3, line.indexOf('`', 3)));
        }
        Set<String> expected = new TreeSet<>(published);
        expected.add("reactive-lock-bom");
        assertThat(rows).as("the artifacts the Artifacts table lists").isEqualTo(expected);
    }

    private static Element read(Path pom) throws Exception {
        Document document = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(pom.toFile());
        return document.getDocumentElement();
    }

    /** The text of the direct child {@code name} of {@code element}, or null. */
    private static String text(Element element, String name) {
        for (Node child = element.getFirstChild(); child != null; child = child.getNextSibling()) {
            if (child instanceof Element e && e.getTagName().equals(name)) {
                return e.getTextContent().strip();
            }
        }
        return null;
    }

    private static String property(Element pom, String name) {
        for (Node child = pom.getFirstChild(); child != null; child = child.getNextSibling()) {
            if (child instanceof Element properties && properties.getTagName().equals("properties")) {
                return text(properties, name);
            }
        }
        return null;
    }
}
