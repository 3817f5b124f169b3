/**
 * The nemesis run: forked client JVMs take locks under a random schedule of combined faults, and a
 * checker goes over the whole history for every guarantee the library makes. {@link
 * io.reactivelock.nemesis.NemesisTest} runs it for 15 s in every build; the {@code soak} Maven
 * profile runs it for 10 minutes. The report (Markdown, SVG timeline, logs) goes to
 * {@code target/nemesis}.
 */
package io.reactivelock.nemesis;
