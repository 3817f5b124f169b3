package io.reactivelock.support;

import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisURI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;

/**
 * A local Redis Cluster of {@code redis-server} processes on 127.0.0.1, built by hand as an operator would:
 * each master is given an even share of the 16384 hash slots ({@code CLUSTER ADDSLOTS}) and a config epoch
 * of its own, the nodes are introduced with {@code CLUSTER MEET}, and replica {@code i} follows master
 * {@code i} ({@code CLUSTER REPLICATE}). {@link #start} returns once every node reports
 * {@code cluster_state:ok} for all slots and every replica's link to its master is up.
 *
 * <p>Replicas never fail over on their own ({@code cluster-replica-no-failover}): only {@link #takeOver}
 * promotes one, so a test decides when a failover happens. Every method blocks; call them from the test
 * thread, never from a reactive pipeline. {@link #close()} stops every node.
 */
public final class RedisCluster implements AutoCloseable {

    private static final int SLOTS = 16384;
    private static final Duration SETTLE_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration POLL_INTERVAL = Duration.ofMillis(50);

    private final List<RedisServer> masters;
    private final List<RedisServer> replicas;
    private final Map<RedisServer, String> ids = new HashMap<>();

    private RedisCluster(List<RedisServer> masters, List<RedisServer> replicas) {
        this.masters = masters;
        this.replicas = replicas;
    }

    /**
     * Starts {@code masters} masters (at least 1) and {@code replicas} replicas (at most one per master:
     * replica {@code i} follows master {@code i}).
     */
    public static RedisCluster start(int masters, int replicas) {
        if (masters < 1 || replicas < 0 || replicas > masters) {
            throw new IllegalArgumentException("need 1+ masters and at most one replica per master");
        }
        List<RedisServer> started = new ArrayList<>();
        try {
            for (int i = 0; i < masters + replicas; i++) {
                List<String> args = new ArrayList<>(List.of("--cluster-enabled", "yes", "--cluster-node-timeout", "2000"));
                if (i >= masters) {
                    args.addAll(List.of("--cluster-replica-no-failover", "yes"));
                }
                started.add(RedisServer.start(args.toArray(String[]::new)));
            }
            RedisCluster cluster = new RedisCluster(List.copyOf(started.subList(0, masters)),
                    List.copyOf(started.subList(masters, started.size())));
            cluster.form();
            return cluster;
        } catch (RuntimeException e) {
            started.forEach(RedisServer::close);
            throw e;
        }
    }

    private void form() {
        List<RedisServer> nodes = nodes();
        nodes.forEach(node -> ids.put(node, node.call("CLUSTER", "MYID")));
        for (int i = 0; i < masters.size(); i++) {
            RedisServer master = masters.get(i);
            master.call("CLUSTER", "SET-CONFIG-EPOCH", Integer.toString(i + 1));
            int from = i * SLOTS / masters.size();
            int to = (i + 1) * SLOTS / masters.size();
            master.call(Stream.concat(Stream.of("CLUSTER", "ADDSLOTS"),
                    IntStream.range(from, to).mapToObj(Integer::toString)).toArray(String[]::new));
        }
        RedisServer first = nodes.get(0);
        nodes.stream().skip(1).forEach(node -> first.call("CLUSTER", "MEET", node.host(), Integer.toString(node.port())));
        await("every node to know the others").atMost(SETTLE_TIMEOUT).pollInterval(POLL_INTERVAL).ignoreExceptions()
                .until(() -> nodes.stream().allMatch(node -> info(node, "cluster_known_nodes").equals(Integer.toString(nodes.size()))));
        for (int i = 0; i < replicas.size(); i++) {
            replicas.get(i).call("CLUSTER", "REPLICATE", id(masters.get(i)));
        }
        await("the replicas to sync").atMost(SETTLE_TIMEOUT).pollInterval(POLL_INTERVAL).ignoreExceptions()
                .until(() -> replicas.stream().allMatch(replica -> replica.call("INFO", "replication").contains("master_link_status:up")));
        settle();
    }

    /**
     * Waits until every live node covers all slots and all of them agree on every node's slots and config
     * epoch. A slot moved before the nodes agree on the epochs can be claimed back by its former owner
     * (whose stale epoch may look newer), after which the two nodes answer {@code MOVED} to each other.
     */
    private void settle() {
        await("the nodes to agree on slots and epochs").atMost(SETTLE_TIMEOUT).pollInterval(POLL_INTERVAL).ignoreExceptions()
                .until(() -> liveNodes().allMatch(RedisCluster::covered)
                        && liveNodes().map(RedisCluster::configuration).distinct().count() == 1);
    }

    /** The masters as started, in slot order: master {@code i} was given the {@code i}-th share of the slots. */
    public List<RedisServer> masters() {
        return masters;
    }

    /** The replicas as started: replica {@code i} followed master {@code i}. */
    public List<RedisServer> replicas() {
        return replicas;
    }

    /** The URIs of the masters as started, to seed a {@code RedisClusterClient}. */
    public List<RedisURI> uris() {
        return masters.stream().map(RedisServer::uri).toList();
    }

    /** The cluster node id of {@code node}. */
    public String id(RedisServer node) {
        return ids.get(node);
    }

    /** The hash slot of {@code key}, as Redis computes it. */
    public int slot(String key) {
        return Integer.parseInt(anyLiveNode().call("CLUSTER", "KEYSLOT", key));
    }

    /** The node that serves {@code slot}, according to a live node. */
    public RedisServer owner(int slot) {
        for (Object range : anyLiveNode().callList("CLUSTER", "SLOTS")) {
            List<?> fields = (List<?>) range;
            if ((Long) fields.get(0) <= slot && slot <= (Long) fields.get(1)) {
                long port = (Long) ((List<?>) fields.get(2)).get(1);
                return nodes().stream().filter(node -> node.port() == port).findFirst().orElseThrow();
            }
        }
        throw new IllegalStateException("no node serves slot " + slot);
    }

    /**
     * Starts moving {@code slot} from its owner to {@code target}: the target is set {@code IMPORTING}, the
     * owner {@code MIGRATING}, so the owner answers {@code ASK} for keys it no longer has.
     */
    public SlotMigration beginMigration(int slot, RedisServer target) {
        settle();
        RedisServer source = owner(slot);
        if (source == target) {
            throw new IllegalArgumentException(target + " already serves slot " + slot);
        }
        target.call("CLUSTER", "SETSLOT", Integer.toString(slot), "IMPORTING", id(source));
        source.call("CLUSTER", "SETSLOT", Integer.toString(slot), "MIGRATING", id(target));
        return new SlotMigration(slot, source, target);
    }

    /**
     * Cuts {@code replica} off from its master for good, as replication lag would: writes to the master
     * from now on never reach it, and it stays a replica until {@link #takeOver}.
     */
    public void detach(RedisServer replica) {
        Replicas.detach(replica, masters.get(replicaIndex(replica)));
    }

    /**
     * Promotes {@code replica} with {@code CLUSTER FAILOVER TAKEOVER} (no agreement with the other
     * masters, no catching up with its master) and waits until every live node sees it serve its former
     * master's slots.
     */
    public void takeOver(RedisServer replica) {
        int slot = replicaIndex(replica) * SLOTS / masters.size(); // the first slot its master was given
        replica.call("CLUSTER", "FAILOVER", "TAKEOVER");
        await("the replica to take over").atMost(SETTLE_TIMEOUT).pollInterval(POLL_INTERVAL).ignoreExceptions()
                .until(() -> liveNodes().allMatch(node -> ownerPort(node, slot) == replica.port()));
        settle();
    }

    /** Stops every node. */
    @Override
    public void close() {
        nodes().forEach(RedisServer::close);
    }

    private int replicaIndex(RedisServer replica) {
        int index = replicas.indexOf(replica);
        if (index < 0) {
            throw new IllegalArgumentException(replica + " is not a replica of this cluster");
        }
        return index;
    }

    private List<RedisServer> nodes() {
        return Stream.concat(masters.stream(), replicas.stream()).toList();
    }

    private Stream<RedisServer> liveNodes() {
        return nodes().stream().filter(node -> node.isRunning() && !node.isPaused());
    }

    private RedisServer anyLiveNode() {
        return liveNodes().findFirst().orElseThrow(() -> new IllegalStateException("no node of the cluster is running"));
    }

    private static boolean covered(RedisServer node) {
        return info(node, "cluster_state").equals("ok") && info(node, "cluster_slots_ok").equals(Integer.toString(SLOTS));
    }

    /** A node's view of the cluster's configuration: each node's id, config epoch and slots, in a stable order. */
    private static String configuration(RedisServer node) {
        return node.call("CLUSTER", "NODES").lines()
                .map(line -> {
                    String[] fields = line.split(" ");
                    StringBuilder view = new StringBuilder(fields[0]).append(' ').append(fields[6]);
                    for (int i = 8; i < fields.length; i++) {
                        if (!fields[i].startsWith("[")) { // a slot being imported or migrated, shown by that node only
                            view.append(' ').append(fields[i]);
                        }
                    }
                    return view.toString();
                })
                .sorted()
                .collect(Collectors.joining("\n"));
    }

    private static long ownerPort(RedisServer node, int slot) {
        for (Object range : node.callList("CLUSTER", "SLOTS")) {
            List<?> fields = (List<?>) range;
            if ((Long) fields.get(0) <= slot && slot <= (Long) fields.get(1)) {
                return (Long) ((List<?>) fields.get(2)).get(1);
            }
        }
        return -1;
    }

    private static String info(RedisServer node, String field) {
        return node.call("CLUSTER", "INFO").lines()
                .filter(line -> line.startsWith(field + ":"))
                .map(line -> line.substring(field.length() + 1).strip())
                .findFirst().orElse("");
    }

    /** One slot on its way from one node to another; see {@link RedisCluster#beginMigration}. */
    public final class SlotMigration {
        private final int slot;
        private final RedisServer source;
        private final RedisServer target;

        private SlotMigration(int slot, RedisServer source, RedisServer target) {
            this.slot = slot;
            this.source = source;
            this.target = target;
        }

        /**
         * Moves every key of the slot that the source still has to the target with {@code MIGRATE}
         * (without {@code REPLACE}: a key on both sides is a bug and fails the move). Returns how many
         * keys it moved.
         */
        public int moveKeys() {
            int moved = 0;
            while (true) {
                List<Object> keys = source.callList("CLUSTER", "GETKEYSINSLOT", Integer.toString(slot), "1000");
                if (keys.isEmpty()) {
                    return moved;
                }
                List<String> command = new ArrayList<>(List.of("MIGRATE", target.host(), Integer.toString(target.port()),
                        "", "0", "5000", "KEYS"));
                keys.forEach(key -> command.add((String) key));
                source.call(command.toArray(String[]::new));
                moved += keys.size();
            }
        }

        /** Moves the keys left, then assigns the slot to the target on every live master. */
        public void finish() {
            moveKeys();
            String slotNumber = Integer.toString(slot);
            target.call("CLUSTER", "SETSLOT", slotNumber, "NODE", id(target));
            source.call("CLUSTER", "SETSLOT", slotNumber, "NODE", id(target));
            liveNodes().filter(node -> node != source && node != target && node.call("ROLE").startsWith("master"))
                    .forEach(node -> node.call("CLUSTER", "SETSLOT", slotNumber, "NODE", id(target)));
            settle();
        }
    }
}
