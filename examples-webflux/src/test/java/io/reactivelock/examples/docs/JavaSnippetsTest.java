package io.reactivelock.examples.docs;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.source.tree.CompilationUnitTree;
import com.sun.source.tree.ExpressionStatementTree;
import com.sun.source.util.JavacTask;
import com.sun.source.util.TreePath;
import com.sun.source.util.TreePathScanner;
import com.sun.source.util.Trees;
import io.reactivelock.examples.docs.DocPages.Block;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import javax.lang.model.type.TypeKind;
import javax.lang.model.type.TypeMirror;
import javax.lang.model.util.Types;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every {@code ```java} block of README.md and docs/ compiles against the library as built: the core,
 * reactive-lock-test, the Micrometer module and the Spring Boot starter (this module's test class
 * path), so a snippet that names an API that does not exist, or calls one with the wrong arguments,
 * fails the build with its page, line and the compiler's message.
 *
 * <p>A block is compiled as it is written, inside a class that extends {@link SnippetContext}: that
 * class declares the application's side a snippet takes for granted ({@code payments},
 * {@code orders}, {@code orderId}...), never anything of the library. A block of statements becomes
 * the body of a method; a block that declares classes, fields or methods becomes the class's body.
 * Its own {@code import} lines are kept, and the standard imports below are added (packages of the
 * library, Reactor, Lettuce, the JDK), so a snippet may leave those out.
 */
class JavaSnippetsTest {

    /** Packages imported on demand into every snippet, those that exist on the class path. */
    private static final List<String> STANDARD_IMPORTS = List.of(
            "java.time", "java.util", "java.util.function",
            "reactor.core", "reactor.core.publisher", "reactor.core.scheduler", "reactor.test", "reactor.util.retry",
            "org.reactivestreams",
            "io.lettuce.core", "io.lettuce.core.cluster", "io.lettuce.core.resource",
            "io.reactivelock", "io.reactivelock.redis", "io.reactivelock.inspect", "io.reactivelock.testing",
            "io.reactivelock.micrometer", "io.reactivelock.spring",
            "io.micrometer.core.instrument", "io.micrometer.observation",
            "org.springframework.stereotype", "org.springframework.context.annotation",
            "org.springframework.scheduling.annotation", "org.springframework.beans.factory.annotation",
            "org.springframework.boot.test.context");

    /**
     * What the snippets take as given of the library: the client and the registries an application
     * makes once. Declared here as source, compiled with the snippets, so that they name the
     * library's types as the snippets do (only {@link SnippetContext}, the application's side, is
     * compiled with this module's tests).
     */
    private static final String GIVENS = "protected ReactiveRedisLock redis; protected ReactiveLock locks;"
            + " protected RedisURI uri = RedisURI.create(\"redis://localhost:6379\");"
            + " protected LockOptions options = LockOptions.defaults();"
            + " protected MeterRegistry meterRegistry; protected ObservationRegistry observationRegistry;";

    /** A line, at the block's left margin, that declares a member or a type rather than run a statement. */
    private static final Pattern DECLARATION = Pattern.compile(
            "^(@\\w+|(public|protected|private|static|final|abstract|sealed)\\s|(class|record|interface|enum)\\s"
                    + "|[\\w<>\\[\\], ?.]+\\s+\\w+\\s*\\([^;=]*\\)\\s*(throws [\\w., ]+)?\\s*\\{)");

    @Test
    void everyJavaBlockCompiles(@TempDir Path out) throws IOException {
        List<Block> blocks = DocPages.blocks("java");
        assertThat(blocks).as("java blocks in README.md and docs/").hasSizeGreaterThan(5);
        assertThat(compile(blocks, out)).as("compiler errors in the Java blocks of README.md and docs/").isEmpty();
    }

    /**
     * Compiles the blocks together, into {@code out} (the classes of snippet {@code i} in
     * {@code docsnippets.Snippet<i>}); answers one line per error, {@code page:line: message}, with the
     * line of the page the error is on. A block that compiles but drops a {@code Mono} or {@code Flux}
     * (an expression statement of a {@code Publisher} type: nothing subscribes, so nothing runs) is an
     * error too.
     */
    static List<String> compile(List<Block> blocks, Path out) throws IOException {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        Map<String, Snippet> units = new LinkedHashMap<>();
        for (Block block : blocks) {
            Snippet snippet = Snippet.of(block, units.size());
            units.put(snippet.toUri().toString(), snippet);
        }
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        try (StandardJavaFileManager files = javac.getStandardFileManager(diagnostics, Locale.ROOT, null)) {
            List<String> options = List.of("-classpath", testClassPath(), "-d", out.toString(), "-proc:none",
                    "-parameters", "-Xlint:-options", "-nowarn");
            JavacTask task = (JavacTask) javac.getTask(null, files, diagnostics, options, null, units.values());
            Iterable<? extends CompilationUnitTree> parsed = task.parse();
            task.analyze();
            List<String> errors = new ArrayList<>();
            for (Diagnostic<? extends JavaFileObject> d : diagnostics.getDiagnostics()) {
                if (d.getKind() != Diagnostic.Kind.ERROR) {
                    continue;
                }
                Snippet snippet = d.getSource() == null ? null : units.get(d.getSource().toUri().toString());
                String where = snippet == null ? "?" : snippet.where(d.getLineNumber());
                errors.add(where + ": " + d.getMessage(Locale.ROOT).replaceAll("\\s+", " ").strip());
            }
            if (errors.isEmpty()) {
                errors.addAll(droppedPublishers(task, parsed, units));
            }
            if (errors.isEmpty()) {
                task.generate(); // the classes, into out: DocExamplesRunTest runs some of them
            }
            return errors;
        }
    }

    /** Expression statements whose value is a {@code Publisher}: a Mono or Flux made and dropped. */
    private static List<String> droppedPublishers(JavacTask task, Iterable<? extends CompilationUnitTree> parsed,
            Map<String, Snippet> units) {
        Trees trees = Trees.instance(task);
        Types types = task.getTypes();
        TypeMirror publisher = types.erasure(task.getElements().getTypeElement("org.reactivestreams.Publisher").asType());
        List<String> dropped = new ArrayList<>();
        for (CompilationUnitTree unit : parsed) {
            Snippet snippet = units.get(unit.getSourceFile().toUri().toString());
            new TreePathScanner<Void, Void>() {
                @Override
                public Void visitExpressionStatement(ExpressionStatementTree node, Void unused) {
                    TypeMirror type = trees.getTypeMirror(new TreePath(getCurrentPath(), node.getExpression()));
                    if (type != null && type.getKind() == TypeKind.DECLARED && types.isAssignable(types.erasure(type), publisher)) {
                        long line = unit.getLineMap().getLineNumber(trees.getSourcePositions().getStartPosition(unit, node));
                        dropped.add(snippet.where(line) + ": a " + types.erasure(type)
                                + " that nothing subscribes to: assign it, return it, or subscribe to it");
                    }
                    return super.visitExpressionStatement(node, unused);
                }
            }.scan(unit, null);
        }
        return dropped;
    }

    /**
     * The test class path: Surefire runs the tests from a manifest-only jar and names the real
     * class path in {@code surefire.test.class.path}; a test run from an IDE has it as its own.
     */
    private static String testClassPath() {
        String surefire = System.getProperty("surefire.test.class.path");
        return surefire != null && !surefire.isBlank() ? surefire : System.getProperty("java.class.path");
    }

    /** One block as a compilation unit, and where its lines are on the page. */
    private static final class Snippet extends SimpleJavaFileObject {
        private final Block block;
        private final String source;
        private final int headerLines;

        private Snippet(URI uri, Block block, String source, int headerLines) {
            super(uri, Kind.SOURCE);
            this.block = block;
            this.source = source;
            this.headerLines = headerLines;
        }

        static Snippet of(Block block, int index) {
            String name = "Snippet" + index;
            StringBuilder header = new StringBuilder("package docsnippets;\n");
            for (String pkg : STANDARD_IMPORTS) {
                if (exists(pkg)) {
                    header.append("import ").append(pkg).append(".*;\n");
                }
            }
            List<String> body = new ArrayList<>();
            boolean members = false;
            for (String line : block.lines()) {
                if (line.startsWith("import ")) {
                    header.append(line).append(' '); // on the header's last line: the block's lines keep their numbers
                    body.add("");
                    continue;
                }
                members |= DECLARATION.matcher(line).find();
                body.add(line);
            }
            header.append("\n@SuppressWarnings(\"all\") class ").append(name)
                    .append(" extends io.reactivelock.examples.docs.SnippetContext { ").append(GIVENS)
                    .append(members ? "" : " void snippet() throws Exception {").append('\n');
            int headerLines = (int) header.chars().filter(c -> c == '\n').count();
            String source = header + String.join("\n", body) + "\n" + (members ? "}" : "}}") + "\n";
            return new Snippet(URI.create("string:///docsnippets/" + name + ".java"), block, source, headerLines);
        }

        private static boolean exists(String pkg) {
            ClassLoader loader = JavaSnippetsTest.class.getClassLoader();
            return pkg.startsWith("java.") || loader.getResource(pkg.replace('.', '/')) != null
                    || loader.getDefinedPackage(pkg) != null;
        }

        String where(long unitLine) {
            long pageLine = block.firstLine() + (unitLine - headerLines - 1);
            return DocPages.repository().relativize(block.page()) + ":" + pageLine;
        }

        @Override
        public CharSequence getCharContent(boolean ignoreEncodingErrors) {
            return source;
        }
    }
}
