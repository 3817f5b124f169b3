package io.reactivelock.redis;

import io.lettuce.core.RedisException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.function.Predicate;

/**
 * Replica-acknowledged writes, as the stores send them: a script that grants or renews (or the
 * plain {@code SET NX PX} of a grant) whose reply says it wrote completes only once the replicas
 * acknowledged that write, else fails with {@link NotReplicated}. One master's
 * ({@link MasterAcks}: standalone, Sentinel) or each master's of a Cluster ({@link ClusterAcks}).
 */
sealed interface ReplicaAcks permits MasterAcks, ClusterAcks {

    /** {@code script} on the grants' connection; a reply that {@code wrote} completes once acknowledged. */
    CompletionStage<Long> run(LuaScript script, Predicate<Long> wrote, String[] keys, String... args);

    /** {@link LockCommands#setIfAbsent} on the grants' connection; a set key completes once acknowledged. */
    CompletionStage<Boolean> setIfAbsent(String key, String value, long ttlMillis);

    /** Whether an acknowledgement is out or grants wait for one: every command sent on a grants' connection then waits behind it. */
    boolean waiting();

    /** What is waited for, and what the last acknowledgement that came back short answered. */
    String describe();

    /** Closes the grants' connections. */
    CompletionStage<Void> closeAsync();

    /** The replicas of {@code INFO replication}: how many are connected, and each as {@code ip:port state lag}. */
    record Replicas(int connected, List<String> each) {

        static Replicas parse(String info) {
            int connected = 0;
            List<String> each = new ArrayList<>();
            for (String line : info.split("\r?\n")) {
                if (line.startsWith("connected_slaves:")) {
                    connected = Integer.parseInt(line.substring("connected_slaves:".length()).trim());
                } else if (line.matches("slave[0-9]+:.*")) {
                    String ip = "";
                    String port = "";
                    String state = "";
                    String lag = "";
                    for (String field : line.substring(line.indexOf(':') + 1).trim().split(",")) {
                        int eq = field.indexOf('=');
                        String value = eq < 0 ? "" : field.substring(eq + 1);
                        switch (eq < 0 ? field : field.substring(0, eq)) {
                            case "ip" -> ip = value;
                            case "port" -> port = value;
                            case "state" -> state = value;
                            case "lag" -> lag = value;
                            default -> { }
                        }
                    }
                    each.add(ip + ":" + port + " " + state + " lag " + lag + " s");
                }
            }
            return new Replicas(connected, List.copyOf(each));
        }

        @Override
        public String toString() {
            return connected + " connected replica" + (connected == 1 ? "" : "s") + (each.isEmpty() ? "" : " " + each);
        }
    }

    /**
     * The replicas did not acknowledge a grant or renewal in time; {@code gone} when the master
     * reports no connected replica left (or fewer than a number set), which more waiting cannot mend.
     */
    static final class NotReplicated extends RedisException {
        private static final long serialVersionUID = 1L;
        final boolean gone;

        NotReplicated(String message, boolean gone) {
            super(message);
            this.gone = gone;
        }

        @Override
        public Throwable fillInStackTrace() {
            return this;
        }
    }

}
