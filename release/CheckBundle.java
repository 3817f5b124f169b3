import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipInputStream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * Checks a Maven Central bundle (the zip the release profile writes) before anyone uploads it:
 * every artifact reactive-lock publishes is there (the parent, the BOM and every artifact the BOM
 * manages), each jar with its -sources and -javadoc jars, every file with matching checksums (and
 * a signature when --signed), every POM with the metadata Central requires (its own or its
 * parent's), and no test code in a main jar. Prints the bundle's contents and what it found wrong;
 * exits 1 if anything.
 *
 * <p>Run from the repository's root (it compares the jars with the modules' target/test-classes):
 * {@code java release/CheckBundle.java target/central-publishing/central-bundle.zip [--signed]}
 */
public class CheckBundle {

    private static final String GROUP_PATH = "io/reactivelock/";
    private static final Pattern TEST_CLASS = Pattern.compile("(^|/)[^/$]*Tests?(\\$[^/]*)?\\.class$");
    private static final Pattern TEST_PACKAGE = Pattern.compile("^io/reactivelock/(support|faults|nemesis|bench|examples)/");

    private final List<String> problems = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: java release/CheckBundle.java <central-bundle.zip> [--signed]");
            System.exit(2);
        }
        boolean signed = List.of(args).contains("--signed");
        CheckBundle check = new CheckBundle();
        check.run(Path.of(args[0]), signed);
        if (check.problems.isEmpty()) {
            System.out.println("OK: the bundle has every published artifact, complete and with its metadata.");
        } else {
            check.problems.forEach(p -> System.out.println("PROBLEM: " + p));
            System.exit(1);
        }
    }

    private void run(Path bundle, boolean signed) throws Exception {
        Map<String, byte[]> files = new TreeMap<>();
        try (ZipFile zip = new ZipFile(bundle.toFile())) {
            for (ZipEntry entry : zip.stream().toList()) {
                if (!entry.isDirectory()) {
                    try (InputStream in = zip.getInputStream(entry)) {
                        files.put(entry.getName(), in.readAllBytes());
                    }
                }
            }
        }
        System.out.println(bundle + ": " + files.size() + " files");
        files.forEach((name, bytes) -> System.out.printf("  %9d  %s%n", bytes.length, name));

        // artifactId -> version, from the directories io/reactivelock/<artifactId>/<version>/
        Map<String, String> artifacts = new TreeMap<>();
        for (String name : files.keySet()) {
            if (!name.startsWith(GROUP_PATH)) {
                problems.add(name + ": not under " + GROUP_PATH);
                continue;
            }
            String[] parts = name.substring(GROUP_PATH.length()).split("/");
            if (parts.length != 3) {
                problems.add(name + ": not <artifactId>/<version>/<file>");
                continue;
            }
            String previous = artifacts.put(parts[0], parts[1]);
            if (previous != null && !previous.equals(parts[1])) {
                problems.add(parts[0] + ": two versions, " + previous + " and " + parts[1]);
            }
        }
        Set<String> versions = new TreeSet<>(artifacts.values());
        if (versions.size() != 1) {
            problems.add("the artifacts do not share one version: " + versions);
        }

        Map<String, Element> poms = new TreeMap<>();
        for (Map.Entry<String, String> artifact : artifacts.entrySet()) {
            String base = GROUP_PATH + artifact.getKey() + "/" + artifact.getValue() + "/" + artifact.getKey() + "-" + artifact.getValue();
            byte[] pom = files.get(base + ".pom");
            if (pom == null) {
                problems.add(artifact.getKey() + ": no POM");
                continue;
            }
            Element root = parse(pom);
            poms.put(artifact.getKey(), root);
            String packaging = text(root, "packaging");
            List<String> required = new ArrayList<>(List.of(base + ".pom"));
            if (packaging == null || packaging.equals("jar")) {
                required.addAll(List.of(base + ".jar", base + "-sources.jar", base + "-javadoc.jar"));
            }
            String prefix = base.substring(base.lastIndexOf('/') + 1) + "-";
            for (String file : files.keySet()) {
                String fileName = file.substring(file.lastIndexOf('/') + 1);
                if (file.startsWith(base) && fileName.startsWith(prefix) && !fileName.matches(".*\\.(md5|sha1|sha256|sha512|asc)$")
                        && !fileName.matches(".*-(sources|javadoc)\\.jar$")) {
                    System.out.println("NOTE: " + artifact.getKey() + " also publishes " + fileName
                            + " (test code; allowed, but not a main jar)");
                }
            }
            for (String file : required) {
                if (!files.containsKey(file)) {
                    problems.add(artifact.getKey() + ": missing " + file.substring(file.lastIndexOf('/') + 1));
                }
            }
            if (files.containsKey(base + ".jar")) {
                checkNoTestCode(artifact.getKey(), files.get(base + ".jar"));
            }
        }

        // Checksums (and signatures) of every file the artifacts consist of.
        for (Map.Entry<String, byte[]> file : files.entrySet()) {
            String name = file.getKey();
            if (name.matches(".*\\.(md5|sha1|sha256|sha512|asc)$")) {
                continue;
            }
            checkDigest(files, name, ".md5", "MD5", true);
            checkDigest(files, name, ".sha1", "SHA-1", true);
            checkDigest(files, name, ".sha256", "SHA-256", false);
            checkDigest(files, name, ".sha512", "SHA-512", false);
            if (signed && !files.containsKey(name + ".asc")) {
                problems.add(name + ": no signature (.asc)");
            }
        }

        // Every artifact the project publishes is in the bundle.
        Element bom = poms.get("reactive-lock-bom");
        Set<String> expected = new TreeSet<>(Set.of("reactive-lock-parent", "reactive-lock-bom"));
        if (bom == null) {
            problems.add("no reactive-lock-bom in the bundle");
        } else {
            Node managed = first(bom, "dependencyManagement");
            if (managed != null) {
                var dependencies = ((Element) managed).getElementsByTagName("artifactId");
                for (int i = 0; i < dependencies.getLength(); i++) {
                    expected.add(dependencies.item(i).getTextContent().strip());
                }
            }
        }
        for (String artifact : expected) {
            if (!artifacts.containsKey(artifact)) {
                problems.add(artifact + ": published by the project (the BOM manages it), missing from the bundle");
            }
        }
        for (String artifact : artifacts.keySet()) {
            if (!expected.contains(artifact)) {
                problems.add(artifact + ": in the bundle, but neither the parent, the BOM nor managed by it");
            }
        }

        // Central's required metadata, in each POM or the parent it inherits from.
        System.out.println("POM metadata (own, or ^ inherited from reactive-lock-parent):");
        for (Map.Entry<String, Element> pom : poms.entrySet()) {
            Element own = pom.getValue();
            Element parent = first(own, "parent") != null ? poms.get(text((Element) first(own, "parent"), "artifactId")) : null;
            StringBuilder line = new StringBuilder("  " + pom.getKey() + ":");
            for (String path : List.of("name", "description", "url", "licenses/license/name", "licenses/license/url",
                    "scm/url", "scm/connection", "developers/developer/name")) {
                String value = path(own, path);
                String inherited = value == null && parent != null && !path.equals("name") && !path.equals("description")
                        ? path(parent, path) : null;
                if (value == null && inherited == null) {
                    problems.add(pom.getKey() + ": its POM has no " + path + (parent == null ? "" : " (nor its parent's)"));
                    line.append(" -").append(path);
                } else {
                    line.append(' ').append(path.substring(path.lastIndexOf('/') + 1)).append(value == null ? "^" : "");
                }
            }
            System.out.println(line);
        }
        System.out.println("artifacts: " + artifacts.keySet() + ", version " + versions);
    }

    /** No test class (by name, package, or as found in a module's target/test-classes) in a main jar. */
    private void checkNoTestCode(String artifact, byte[] jar) throws IOException {
        Set<String> testClasses = testClasses();
        int classes = 0;
        try (ZipInputStream in = new ZipInputStream(new ByteArrayInputStream(jar))) {
            for (ZipEntry entry; (entry = in.getNextEntry()) != null; ) {
                String name = entry.getName();
                if (!name.endsWith(".class")) {
                    continue;
                }
                classes++;
                if (TEST_CLASS.matcher(name).find() || TEST_PACKAGE.matcher(name).find() || testClasses.contains(name)) {
                    problems.add(artifact + ".jar: test code " + name);
                }
            }
        }
        if (classes == 0) {
            problems.add(artifact + ".jar: no classes");
        }
    }

    private Set<String> testClasses;

    private Set<String> testClasses() throws IOException {
        if (testClasses == null) {
            testClasses = new TreeSet<>();
            try (Stream<Path> dirs = Files.walk(Path.of("."), 5)) {
                for (Path dir : dirs.filter(d -> d.endsWith(Path.of("target", "test-classes"))).toList()) {
                    try (Stream<Path> classes = Files.walk(dir)) {
                        classes.filter(c -> c.toString().endsWith(".class"))
                                .forEach(c -> testClasses.add(dir.relativize(c).toString().replace('\\', '/')));
                    }
                }
            }
        }
        return testClasses;
    }

    private void checkDigest(Map<String, byte[]> files, String name, String suffix, String algorithm, boolean required)
            throws Exception {
        byte[] expected = files.get(name + suffix);
        if (expected == null) {
            if (required) {
                problems.add(name + ": no " + suffix + " checksum");
            }
            return;
        }
        String actual = HexFormat.of().formatHex(MessageDigest.getInstance(algorithm).digest(files.get(name)));
        if (!new String(expected).strip().startsWith(actual)) {
            problems.add(name + suffix + ": does not match the file");
        }
    }

    private static Element parse(byte[] pom) throws Exception {
        Document document = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(new ByteArrayInputStream(pom));
        return document.getDocumentElement();
    }

    private static Node first(Element element, String name) {
        for (Node child = element.getFirstChild(); child != null; child = child.getNextSibling()) {
            if (child instanceof Element e && e.getTagName().equals(name)) {
                return e;
            }
        }
        return null;
    }

    private static String text(Element element, String name) {
        Node node = first(element, name);
        return node == null ? null : node.getTextContent().strip();
    }

    /** The text at a slash-separated path of direct children, or null if missing or blank. */
    private static String path(Element element, String path) {
        Element at = element;
        for (String step : path.split("/")) {
            Node next = first(at, step);
            if (next == null) {
                return null;
            }
            at = (Element) next;
        }
        String text = at.getTextContent().strip();
        return text.isEmpty() ? null : text;
    }
}
