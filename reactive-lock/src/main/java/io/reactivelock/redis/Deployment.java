package io.reactivelock.redis;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/** The Redis an inspector reads: one server (standalone or a Sentinel's master), or a Cluster. */
sealed interface Deployment {

    /** Commands on keys, routed to the node that serves them. */
    RedisClusterAsyncCommands<String, String> commands();

    /** The {@code TIME} of the server that holds {@code key}. */
    CompletionStage<List<String>> time(String key);

    /** Throws {@link IllegalArgumentException} unless {@code cursor} is one that {@link #scan} returned. */
    void checkCursor(String cursor);

    /** One {@code SCAN} step from {@code cursor} ({@code null}: the start). */
    CompletionStage<Step> scan(@Nullable String cursor, ScanArgs args);

    /** The keys of one {@code SCAN} step and the cursor of the next one, {@code null} after the last. */
    record Step(List<String> keys, @Nullable String cursor) {}

    Pattern NUMBER = Pattern.compile("[0-9]{1,20}");

    /** A standalone server; its cursors are those of {@code SCAN}. */
    record Single(StatefulRedisConnection<String, String> connection) implements Deployment {

        @Override
        public RedisClusterAsyncCommands<String, String> commands() {
            return connection.async();
        }

        @Override
        public CompletionStage<List<String>> time(String key) {
            return connection.async().time();
        }

        @Override
        public void checkCursor(String cursor) {
            if (!NUMBER.matcher(cursor).matches()) {
                throw new IllegalArgumentException("not a cursor of this inspector: '" + cursor + "'");
            }
        }

        @Override
        public CompletionStage<Step> scan(@Nullable String cursor, ScanArgs args) {
            return connection.async().scan(ScanCursor.of(cursor == null ? "0" : cursor), args)
                    .thenApply(page -> new Step(page.getKeys(), page.isFinished() ? null : page.getCursor()));
        }
    }

    /**
     * A Cluster: every master is scanned in turn, in the order of their node ids. A cursor is
     * {@code <node id>:<SCAN cursor on that node>}. A node that left the Cluster between two pages
     * is skipped, with the keys it still had to return.
     */
    record Cluster(StatefulRedisClusterConnection<String, String> connection) implements Deployment {

        private static final Pattern CURSOR = Pattern.compile("([0-9a-f]{1,64}):([0-9]{1,20})");

        @Override
        public RedisClusterAsyncCommands<String, String> commands() {
            return connection.async();
        }

        @Override
        public CompletionStage<List<String>> time(String key) {
            // The clock that wrote the deadlines of the key's waiters: that of the key's master.
            RedisClusterNode master = connection.getPartitions().getMasterBySlot(SlotHash.getSlot(key));
            if (master == null) {
                return connection.async().time();
            }
            return on(master).thenCompose(node -> node.async().time());
        }

        /**
         * The connection to {@code node} that routing by slot uses too: Lettuce keeps connections
         * asked for by node id apart from those, so asking by id would open one more per master.
         */
        private CompletionStage<StatefulRedisConnection<String, String>> on(RedisClusterNode node) {
            return connection.getConnectionAsync(node.getUri().getHost(), node.getUri().getPort());
        }

        @Override
        public void checkCursor(String cursor) {
            if (!CURSOR.matcher(cursor).matches()) {
                throw new IllegalArgumentException("not a cursor of this inspector: '" + cursor + "'");
            }
        }

        @Override
        public CompletionStage<Step> scan(@Nullable String cursor, ScanArgs args) {
            List<String> masters = connection.getPartitions().stream()
                    .filter(node -> node.is(RedisClusterNode.NodeFlag.UPSTREAM))
                    .map(RedisClusterNode::getNodeId)
                    .sorted()
                    .toList();
            String node;
            String position = "0";
            if (cursor == null) {
                node = masters.isEmpty() ? null : masters.get(0);
            } else {
                int colon = cursor.indexOf(':');
                String wanted = cursor.substring(0, colon);
                if (masters.contains(wanted)) {
                    node = wanted;
                    position = cursor.substring(colon + 1);
                } else {
                    node = after(masters, wanted);
                }
            }
            if (node == null) {
                return CompletableFuture.completedFuture(new Step(List.of(), null));
            }
            String scanned = node;
            ScanCursor from = ScanCursor.of(position);
            RedisClusterNode server = connection.getPartitions().getPartitionByNodeId(scanned);
            if (server == null) {
                return CompletableFuture.failedFuture(new IllegalStateException("no master " + scanned + " in the Cluster's view"));
            }
            return on(server)
                    .thenCompose(c -> c.async().scan(from, args))
                    .thenApply((KeyScanCursor<String> page) -> {
                        if (!page.isFinished()) {
                            return new Step(page.getKeys(), scanned + ":" + page.getCursor());
                        }
                        String next = after(masters, scanned);
                        return new Step(page.getKeys(), next == null ? null : next + ":0");
                    });
        }

        /** The first of the sorted {@code nodes} after {@code node}, or {@code null}. */
        private static @Nullable String after(List<String> nodes, String node) {
            return nodes.stream().filter(id -> id.compareTo(node) > 0).findFirst().orElse(null);
        }
    }
}
