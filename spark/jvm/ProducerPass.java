// SPDX-License-Identifier: Apache-2.0
package dcdrill;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.catalyst.InternalRow;

/**
 * The producer pass (spark/checker.py explains its tables): the produced rows, folded per task
 * as the scan streams them (Scan.java) into counts per (phase, DC and topic, partition, second,
 * acknowledgement word) with the word's bitmap, a latency histogram per (phase, second) and one
 * per (phase, DC and topic, partition) group, for the report's DC and partition splits. The
 * tables are small (a row per partition and 50 ms at most), so tasks hand them to the driver
 * whole; no shuffle. The driver rolls the words away (merge).
 */
public final class ProducerPass {
    static final long NO_WORD = Long.MIN_VALUE;
    // fine state: key (group, packed second and word), produced, acked, failed, indeterminate, mask
    static final int PRODUCED = 2, ACKED = 3, FAILED = 4, INDETERMINATE = 5, MASK = 6, FINE_WIDTH = 7;
    static final int SEQS_WIDTH = 5;

    /** A (DC and topic, partition, phase) group: what a fine row's names come from. */
    record Group(long dt, int partition, int phase, long tp, String dc, String topic) implements java.io.Serializable {}

    /** One task's tables: fine rows keyed by group index, latency counts. */
    static final class Tables implements java.io.Serializable {
        final List<Group> groups = new ArrayList<>();
        long[] fine;      // FINE_WIDTH longs per row: group index, second, word, counts, mask
        long[] latency;   // phase, second, latency, count
        long[] groupLatency;  // group index, latency, count
        long[] seqs;      // producer idh, 0, rows, largest seq + 1, Long.MAX_VALUE - smallest seq
    }

    /** The tasks' tables merged, as JSON lines: counts per (phase, DC and topic, partition, second),
     *  each partition's acknowledgement timeline ("words" and "masks"), acks per second ("ack_sec")
     *  the latency histogram ("latency") and each group's ("group_latency_ms"). */
    static String merge(List<Tables> parts, int wordMs) {
        Map<Group, Integer> groups = new HashMap<>();
        List<Group> order = new ArrayList<>();
        LongPairMap fine = new LongPairMap(FINE_WIDTH, 1 << 12);
        LongPairMap latency = new LongPairMap(3, 1 << 8);
        LongPairMap groupLatency = new LongPairMap(3, 1 << 8);
        LongPairMap seqs = new LongPairMap(SEQS_WIDTH, 64);
        for (Tables t : parts) {
            for (int i = 0; i < t.seqs.length; i += SEQS_WIDTH) {
                int o = seqs.at(t.seqs[i], 0);
                seqs.slots[o + 2] += t.seqs[i + 2];
                seqs.slots[o + 3] = Math.max(seqs.slots[o + 3], t.seqs[i + 3]);
                seqs.slots[o + 4] = Math.max(seqs.slots[o + 4], t.seqs[i + 4]);
            }
            int[] global = new int[t.groups.size()];
            for (int i = 0; i < global.length; i++) {
                Group g = t.groups.get(i);
                global[i] = groups.computeIfAbsent(g, k -> { order.add(k); return order.size() - 1; });
            }
            for (int i = 0; i < t.fine.length; i += FINE_WIDTH) {
                long k1 = ((long) global[(int) (t.fine[i] >>> 32)] << 32) | (t.fine[i] & 0xFFFFFFFFL);
                int o = fine.at(k1, t.fine[i + 1]);
                long[] s = fine.slots;
                for (int k = PRODUCED; k < MASK; k++) s[o + k] += t.fine[i + k];
                s[o + MASK] |= t.fine[i + MASK];
            }
            for (int i = 0; i < t.latency.length; i += 3) {
                int o = latency.at(t.latency[i], t.latency[i + 1]);
                latency.slots[o + 2] += t.latency[i + 2];
            }
            for (int i = 0; i < t.groupLatency.length; i += 3) {
                int o = groupLatency.at(global[(int) t.groupLatency[i]], t.groupLatency[i + 1]);
                groupLatency.slots[o + 2] += t.groupLatency[i + 2];
            }
        }
        // The acknowledgement words only serve the timelines: rolled away here, the driver gets a row
        // per (group, second), a bitmap timeline per partition and the acks per second.
        LongPairMap rolled = new LongPairMap(6, 1 << 10);  // (group << 32 | second, 0): produced..indeterminate
        LongPairMap words = new LongPairMap(3, 1 << 12);   // (tp, word): mask
        LongPairMap perSec = new LongPairMap(3, 1 << 8);   // (ack second, 0): acked
        Map<Long, Group> partitions = new HashMap<>();
        long[] s = fine.slots;
        for (int i = 0; i < fine.used.length; i++) {
            if (!fine.used[i]) continue;
            int o = i * FINE_WIDTH, r = rolled.at(s[o], 0);
            for (int k = 0; k < 4; k++) rolled.slots[r + 2 + k] += s[o + PRODUCED + k];
            long word = s[o + 1];
            if (word == NO_WORD) continue;
            Group g = order.get((int) (s[o] >>> 32));
            partitions.putIfAbsent(g.tp(), g);
            int w = words.at(g.tp(), word);
            words.slots[w + 2] |= s[o + MASK];
            int a = perSec.at(Math.floorDiv(word * wordMs, 1000), 0);
            perSec.slots[a + 2] += s[o + ACKED];
        }
        StringBuilder b = new StringBuilder();
        long[] f = rolled.slots;
        for (int i = 0; i < rolled.used.length; i++) {
            if (!rolled.used[i]) continue;
            int o = i * 6;
            Group g = order.get((int) (f[o] >>> 32));
            b.append("{\"phase\":").append(g.phase()).append(",\"dc\":").append(quote(g.dc()))
             .append(",\"topic\":").append(quote(g.topic())).append(",\"partition\":").append(g.partition())
             .append(",\"send_sec\":").append(f[o] & 0xFFFFFFFFL)
             .append(",\"produced\":").append(f[o + 2]).append(",\"acked\":").append(f[o + 3])
             .append(",\"failed\":").append(f[o + 4]).append(",\"indeterminate\":").append(f[o + 5])
             .append(",\"dt\":").append(g.dt()).append(",\"tp\":").append(g.tp()).append("}\n");
        }
        Map<Long, List<long[]>> timelines = new HashMap<>();
        for (int i = 0; i < words.used.length; i++) {
            if (words.used[i]) timelines.computeIfAbsent(words.slots[i * 3], k -> new ArrayList<>())
                    .add(new long[] {words.slots[i * 3 + 1], words.slots[i * 3 + 2]});
        }
        for (Map.Entry<Long, List<long[]>> e : timelines.entrySet()) {
            Group g = partitions.get(e.getKey());
            List<long[]> ws = e.getValue();
            ws.sort((x, y) -> Long.compare(x[0], y[0]));
            b.append("{\"topic\":").append(quote(g.topic())).append(",\"partition\":").append(g.partition())
             .append(",\"words\":[");
            for (int i = 0; i < ws.size(); i++) b.append(i == 0 ? "" : ",").append(ws.get(i)[0]);
            b.append("],\"masks\":[");
            for (int i = 0; i < ws.size(); i++) b.append(i == 0 ? "" : ",").append(ws.get(i)[1]);
            b.append("]}\n");
        }
        for (int i = 0; i < perSec.used.length; i++) {
            if (perSec.used[i]) b.append("{\"ack_sec\":").append(perSec.slots[i * 3])
                    .append(",\"acked\":").append(perSec.slots[i * 3 + 2]).append("}\n");
        }
        // Per producer: rows and seq range, so the verifier can check seqs are dense (RECORD.md).
        for (int i = 0; i < seqs.used.length; i++) {
            if (!seqs.used[i]) continue;
            long[] q = seqs.slots;
            int o = i * SEQS_WIDTH;
            b.append("{\"producer_idh\":").append(q[o]).append(",\"rows\":").append(q[o + 2])
             .append(",\"min_seq\":").append(Long.MAX_VALUE - q[o + 4]).append(",\"max_seq\":").append(q[o + 3] - 1)
             .append("}\n");
        }
        long[] l = latency.slots;
        for (int i = 0; i < latency.used.length; i++) {
            if (!latency.used[i]) continue;
            int o = i * 3;
            b.append("{\"phase\":").append(l[o] >>> 32).append(",\"send_sec\":").append(l[o] & 0xFFFFFFFFL)
             .append(",\"latency\":").append(l[o + 1]).append(",\"produced\":").append(l[o + 2]).append("}\n");
        }
        long[] gl = groupLatency.slots;
        for (int i = 0; i < groupLatency.used.length; i++) {
            if (!groupLatency.used[i]) continue;
            int o = i * 3;
            Group g = order.get((int) gl[o]);
            b.append("{\"phase\":").append(g.phase()).append(",\"dc\":").append(quote(g.dc()))
             .append(",\"topic\":").append(quote(g.topic())).append(",\"partition\":").append(g.partition())
             .append(",\"group_latency_ms\":").append(gl[o + 1]).append(",\"acked\":").append(gl[o + 2]).append("}\n");
        }
        return b.toString();
    }

    /** One task's produced rows (bad rows left out), as the scan streams them (Scan.java). */
    static final class Fold {
        private final long[] starts, ends;
        private final int wordMs;
        private final Tables t = new Tables();
        private final LongPairMap groups = new LongPairMap(3, 64);   // (dt, partition << 8 | phase) -> index
        private final LongPairMap fine = new LongPairMap(FINE_WIDTH, 1 << 12);
        private final LongPairMap latency = new LongPairMap(3, 1 << 8);
        private final LongPairMap groupLatency = new LongPairMap(3, 1 << 8);  // (group, latency): count
        private final LongPairMap seqs = new LongPairMap(SEQS_WIDTH, 64);
        private long lastIdh = 0;
        private int lastSeqs = -1;  // the slot of the previous row's producer: rows come in runs

        Fold(long[] starts, long[] ends, int wordMs) { this.starts = starts; this.ends = ends; this.wordMs = wordMs; }

        /** kind: Screen.P_OK, P_FAIL or P_INFO. */
        void add(InternalRow r, int kind) {
            long idh = r.getLong(Scan.IDH), seq = r.getLong(Scan.SEQ);
            if (lastSeqs < 0 || idh != lastIdh) { lastSeqs = seqs.at(idh, 0); lastIdh = idh; }
            long[] q = seqs.slots;
            q[lastSeqs + 2]++;
            q[lastSeqs + 3] = Math.max(q[lastSeqs + 3], seq + 1);
            q[lastSeqs + 4] = Math.max(q[lastSeqs + 4], Long.MAX_VALUE - seq);
            long send = r.getLong(Scan.SEND), dt = r.getLong(Scan.DT);
            int partition = r.getInt(Scan.PART), phase = Identity.phase(send, starts, ends);
            int go = groups.at(dt, ((long) partition << 8) | phase);
            if (groups.slots[go + 2] == 0) {  // new group: index + 1 stored, names taken once
                t.groups.add(new Group(dt, partition, phase, r.getLong(Scan.TP),
                        r.isNullAt(Scan.DC) ? null : r.getUTF8String(Scan.DC).toString(),
                        r.getUTF8String(Scan.TOPIC).toString()));
                groups.slots[go + 2] = t.groups.size();
            }
            long group = groups.slots[go + 2] - 1, sec = Math.floorDiv(send, 1000);
            boolean ok = kind == Screen.P_OK && !r.isNullAt(Scan.ACK);
            long ack = ok ? r.getLong(Scan.ACK) : 0;
            int o = fine.at((group << 32) | (sec & 0xFFFFFFFFL), ok ? Math.floorDiv(ack, wordMs) : NO_WORD);
            long[] s = fine.slots;
            s[o + PRODUCED]++;
            if (kind == Screen.P_OK) s[o + ACKED]++;
            else if (kind == Screen.P_FAIL) s[o + FAILED]++;
            else s[o + INDETERMINATE]++;
            if (ok) {
                s[o + MASK] |= 1L << Math.floorMod(ack, wordMs);
                int lo = latency.at(((long) phase << 32) | (sec & 0xFFFFFFFFL), ack - send);
                latency.slots[lo + 2]++;
                int gl = groupLatency.at(group, ack - send);
                groupLatency.slots[gl + 2]++;
            }
        }

        Tables done() {
            t.fine = fine.states();
            t.latency = latency.states();
            t.groupLatency = groupLatency.states();
            t.seqs = seqs.states();
            return t;
        }
    }

    static String quote(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }
}
