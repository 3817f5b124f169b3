package io.reactivelock.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Each Lua script is traced to the protocol model (src/model): a model step, or the README's list of
 * scripts not modelled yet, names it with the SHA-1 {@code EVALSHA} knows it by. A script whose text
 * changes fails here until the model (or the list) is looked at again and its recorded hash updated.
 */
class ProtocolModelTraceTest {

    private static final Path MODEL = Path.of("src/model");
    private static final Pattern TRACE = Pattern.compile("@(script|unmodelled) (\\w+\\.\\w+) sha1=([0-9a-f]{40})");

    @Test
    void everyScriptIsTracedToTheModelWithItsCurrentHash() throws Exception {
        String traces = modelText();
        List<String> wrong = new ArrayList<>();
        for (Class<?> scripts : List.of(LockScripts.class, PrimitiveScripts.class, MultiLockScripts.class)) {
            for (Field f : scripts.getDeclaredFields()) {
                if (f.getType() != LuaScript.class || !Modifier.isStatic(f.getModifiers())) {
                    continue;
                }
                f.setAccessible(true);
                String name = scripts.getSimpleName() + "." + f.getName();
                String sha = ((LuaScript) f.get(null)).sha();
                Matcher m = TRACE.matcher(traces);
                boolean found = false;
                while (m.find()) {
                    if (m.group(2).equals(name)) {
                        found = true;
                        if (!m.group(3).equals(sha)) {
                            wrong.add(name + ": the model records " + m.group(3) + ", the script is now " + sha);
                        }
                    }
                }
                if (!found) {
                    wrong.add(name + ": not traced; add \"@script " + name + " sha1=" + sha + "\" to its model step"
                            + " (or \"@unmodelled ...\" to src/model/README.md)");
                }
            }
        }
        assertThat(wrong).as("scripts whose model trace is missing or stale").isEmpty();
    }

    @Test
    void everyTraceNamesAnExistingScript() throws Exception {
        Matcher m = TRACE.matcher(modelText());
        List<String> unknown = new ArrayList<>();
        int traces = 0;
        while (m.find()) {
            traces++;
            String[] parts = m.group(2).split("\\.");
            Class<?> c = Class.forName("io.reactivelock.redis." + parts[0]);
            try {
                assertThat(c.getDeclaredField(parts[1]).getType()).isEqualTo(LuaScript.class);
            } catch (NoSuchFieldException e) {
                unknown.add(m.group(2));
            }
        }
        assertThat(traces).isGreaterThan(0);
        assertThat(unknown).as("traces of scripts that no longer exist").isEmpty();
    }

    /** A script modelled in a .pml file is off the README's list of scripts not modelled yet. */
    @Test
    void noModelledScriptIsListedAsUnmodelled() throws Exception {
        Matcher m = TRACE.matcher(modelText());
        Set<String> modelled = new TreeSet<>();
        Set<String> unmodelled = new TreeSet<>();
        while (m.find()) {
            (m.group(1).equals("script") ? modelled : unmodelled).add(m.group(2));
        }
        assertThat(modelled).as("scripts traced to a model step").contains("LockScripts.ACQUIRE", "LockScripts.ACQUIRE_FAIR",
                "LockScripts.RELEASE_FAIR");
        modelled.retainAll(unmodelled);
        assertThat(modelled).as("scripts both traced to a model step and listed as not modelled").isEmpty();
    }

    private static String modelText() throws IOException {
        StringBuilder text = new StringBuilder();
        try (Stream<Path> files = Files.list(MODEL)) {
            for (Path p : files.filter(p -> p.toString().endsWith(".pml") || p.toString().endsWith(".md")).sorted().toList()) {
                text.append(Files.readString(p)).append('\n');
            }
        }
        return text.toString();
    }
}
