package io.reactivelock.examples.docs;

import static org.assertj.core.api.Assertions.assertThat;

import io.reactivelock.examples.docs.DocPages.Block;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;
import org.yaml.snakeyaml.Yaml;

/**
 * The configuration blocks of README.md and docs/ configure what exists: every {@code reactive-lock.*}
 * property of a {@code yaml} or {@code properties} block is one the starter declares (its
 * configuration metadata, generated from its properties classes), and every Maven block names
 * reactive-lock's artifacts as the build publishes them: a published artifactId, no version but the
 * BOM's, which is the build's. The README's test command is the one CI runs.
 */
class ConfigBlocksTest {

    private static final Pattern PROPERTY_NAME = Pattern.compile("\"name\"\\s*:\\s*\"(reactive-lock[^\"]*)\"");

    @Test
    void everyReactiveLockPropertyOfTheDocsIsOneTheStarterDeclares() throws IOException {
        Set<String> declared = starterProperties();
        assertThat(declared).as("reactive-lock.* properties in the starter's metadata").contains("reactive-lock.key-prefix");
        List<String> unknown = new ArrayList<>();
        int checked = 0;
        for (Block block : DocPages.blocks("yaml", "yml", "properties")) {
            Map<String, Object> flat = new LinkedHashMap<>();
            if (block.language().equals("properties")) {
                for (String line : block.lines()) {
                    int eq = line.indexOf('=');
                    if (eq > 0 && !line.strip().startsWith("#")) {
                        flat.put(line.substring(0, eq).strip(), line.substring(eq + 1).strip());
                    }
                }
            } else {
                Object yaml = new Yaml().load(block.text());
                flatten("", yaml, flat);
            }
            for (String key : flat.keySet()) {
                if (key.startsWith("reactive-lock.")) {
                    checked++;
                    if (!declared.contains(key)) {
                        unknown.add(block.where() + ": " + key);
                    }
                }
            }
        }
        // Properties named inline, as `reactive-lock.something=value` or `reactive-lock.something`.
        Pattern inline = Pattern.compile("`(reactive-lock\\.[a-z0-9.-]+[a-z0-9])(=[^`]*)?`");
        for (Path page : DocPages.pages()) {
            Matcher m = inline.matcher(Files.readString(page));
            while (m.find()) {
                checked++;
                if (!declared.contains(m.group(1))) {
                    unknown.add(DocPages.repository().relativize(page) + ": `" + m.group(1) + "`");
                }
            }
        }
        assertThat(checked).as("reactive-lock.* properties named in README.md and docs/").isGreaterThan(5);
        assertThat(unknown).as("reactive-lock.* properties the starter does not declare").isEmpty();
    }

    @Test
    void everyMavenBlockNamesPublishedArtifactsAndOnlyTheBomHasAVersion() throws Exception {
        Path root = DocPages.repository();
        String version = childText(parse(Files.readString(root.resolve("pom.xml"))), "version");
        Set<String> published = new TreeSet<>();
        NodeList managed = parse(Files.readString(root.resolve("reactive-lock/bom/pom.xml"))).getElementsByTagName("artifactId");
        for (int i = 0; i < managed.getLength(); i++) {
            published.add(managed.item(i).getTextContent().strip()); // the BOM's own artifactId included
        }
        List<String> wrong = new ArrayList<>();
        int dependencies = 0;
        for (Block block : DocPages.blocks("xml")) {
            NodeList nodes = parse("<root>" + block.text() + "</root>").getElementsByTagName("dependency");
            for (int i = 0; i < nodes.getLength(); i++) {
                Element dependency = (Element) nodes.item(i);
                if (!"io.reactivelock".equals(childText(dependency, "groupId"))) {
                    continue;
                }
                dependencies++;
                String artifact = childText(dependency, "artifactId");
                String itsVersion = childText(dependency, "version");
                if (!published.contains(artifact)) {
                    wrong.add(block.where() + ": " + artifact + " is not a published artifact " + published);
                } else if (artifact.equals("reactive-lock-bom")) {
                    if (!version.equals(itsVersion) || !"pom".equals(childText(dependency, "type"))
                            || !"import".equals(childText(dependency, "scope"))) {
                        wrong.add(block.where() + ": the BOM is imported as version " + version + ", type pom, scope import");
                    }
                } else if (itsVersion != null) {
                    wrong.add(block.where() + ": " + artifact + " has a <version>, which the BOM manages");
                }
            }
        }
        assertThat(dependencies).as("io.reactivelock dependencies in README.md and docs/").isGreaterThan(3);
        assertThat(wrong).isEmpty();
    }

    @Test
    void theReadmesTestCommandIsTheOneCiRuns() throws IOException {
        Path root = DocPages.repository();
        String readme = Files.readString(root.resolve("README.md"));
        Matcher row = Pattern.compile("\\| run the whole test suite \\| `([^`]+)` \\|").matcher(readme);
        assertThat(row.find()).as("README.md's set-up table names the test command").isTrue();
        List<String> ci = Files.readAllLines(root.resolve(".ci/run"));
        assertThat(ci.get(ci.size() - 1).strip()).as(".ci/run's last line").isEqualTo(row.group(1));
        assertThat(readme).contains("| `./mvnw -pl examples-webflux -am -Dmaven.test.skip=true spring-boot:run` |");
    }

    /** The starter's reactive-lock.* properties, from its configuration metadata on the class path. */
    private static Set<String> starterProperties() throws IOException {
        Set<String> names = new TreeSet<>();
        Enumeration<URL> files = ConfigBlocksTest.class.getClassLoader().getResources("META-INF/spring-configuration-metadata.json");
        while (files.hasMoreElements()) {
            try (InputStream in = files.nextElement().openStream()) {
                Matcher m = PROPERTY_NAME.matcher(new String(in.readAllBytes(), StandardCharsets.UTF_8));
                while (m.find()) {
                    names.add(m.group(1));
                }
            }
        }
        return names;
    }

    @SuppressWarnings("unchecked")
    private static void flatten(String prefix, Object value, Map<String, Object> into) {
        if (value instanceof Map<?, ?> map) {
            for (Map.Entry<String, Object> e : ((Map<String, Object>) map).entrySet()) {
                flatten(prefix.isEmpty() ? e.getKey() : prefix + "." + e.getKey(), e.getValue(), into);
            }
        } else {
            into.put(prefix, value);
        }
    }

    private static Element parse(String xml) throws Exception {
        return DocumentBuilderFactory.newInstance().newDocumentBuilder()
                .parse(new ByteArrayInputStream(xml.getBytes(StandardCharsets.UTF_8))).getDocumentElement();
    }

    private static String childText(Element element, String name) {
        for (Node child = element.getFirstChild(); child != null; child = child.getNextSibling()) {
            if (child instanceof Element e && e.getTagName().equals(name)) {
                return e.getTextContent().strip();
            }
        }
        return null;
    }
}
