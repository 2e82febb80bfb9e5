package dcdrill;

import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * The producer pass (spark/checker.py explains its two tables): one scan of the produced ledger,
 * folded per task into counts per (phase, DC and topic, partition, second, acknowledgement word)
 * with the word's bitmap, and a latency histogram per (phase, second). The tables are small
 * (a row per partition and 50 ms at most), so tasks hand them to the driver whole; no shuffle.
 */
public final class ProducerPass {
    static final int OK = 0, FAIL = 1, INFO = 2;
    static final long NO_WORD = Long.MIN_VALUE;
    // fine state: key (group, packed second and word), produced, acked, failed, indeterminate, mask
    static final int PRODUCED = 2, ACKED = 3, FAILED = 4, INDETERMINATE = 5, MASK = 6, FINE_WIDTH = 7;

    /** A (DC and topic, partition, phase) group: what a fine row's names come from. */
    record Group(long dt, int partition, int phase, long tp, String dc, String topic) implements java.io.Serializable {}

    /** One task's tables: fine rows keyed by group index, latency counts. */
    static final class Tables implements java.io.Serializable {
        final List<Group> groups = new java.util.ArrayList<>();
        long[] fine;      // FINE_WIDTH longs per row: group index, second, word, counts, mask
        long[] latency;   // phase, second, latency, count
    }

    /** produced (bad rows filtered out): dc, topic, partition, status (0 ok, 1 fail, 2 info),
     *  send_ms, ack_ms, dt, tp. Returns JSON lines: fine rows, then latency rows ("latency" set). */
    public static String run(Dataset<Row> produced, long[] starts, long[] ends, int wordMs) {
        List<Tables> parts = produced.queryExecution().toRdd().toJavaRDD()
                .mapPartitions(it -> List.of(fold(it, starts, ends, wordMs)).iterator()).collect();
        Map<Group, Integer> groups = new HashMap<>();
        List<Group> order = new java.util.ArrayList<>();
        LongPairMap fine = new LongPairMap(FINE_WIDTH, 1 << 12);
        LongPairMap latency = new LongPairMap(3, 1 << 8);
        for (Tables t : parts) {
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
        }
        StringBuilder b = new StringBuilder();
        long[] s = fine.slots;
        for (int i = 0; i < fine.used.length; i++) {
            if (!fine.used[i]) continue;
            int o = i * FINE_WIDTH;
            Group g = order.get((int) (s[o] >>> 32));
            long word = s[o + 1];
            b.append("{\"phase\":").append(g.phase()).append(",\"dc\":").append(quote(g.dc()))
             .append(",\"topic\":").append(quote(g.topic())).append(",\"partition\":").append(g.partition())
             .append(",\"send_sec\":").append(s[o] & 0xFFFFFFFFL)
             .append(",\"ack_word\":").append(word == NO_WORD ? "null" : Long.toString(word))
             .append(",\"produced\":").append(s[o + PRODUCED]).append(",\"acked\":").append(s[o + ACKED])
             .append(",\"failed\":").append(s[o + FAILED]).append(",\"indeterminate\":").append(s[o + INDETERMINATE])
             .append(",\"mask\":").append(word == NO_WORD ? "null" : Long.toString(s[o + MASK]))
             .append(",\"dt\":").append(g.dt()).append(",\"tp\":").append(g.tp()).append("}\n");
        }
        long[] l = latency.slots;
        for (int i = 0; i < latency.used.length; i++) {
            if (!latency.used[i]) continue;
            int o = i * 3;
            b.append("{\"phase\":").append(l[o] >>> 32).append(",\"send_sec\":").append(l[o] & 0xFFFFFFFFL)
             .append(",\"latency\":").append(l[o + 1]).append(",\"produced\":").append(l[o + 2]).append("}\n");
        }
        return b.toString();
    }

    static Tables fold(Iterator<InternalRow> it, long[] starts, long[] ends, int wordMs) {
        Tables t = new Tables();
        LongPairMap groups = new LongPairMap(3, 64);   // (dt, partition << 8 | phase) -> index
        LongPairMap fine = new LongPairMap(FINE_WIDTH, 1 << 12);
        LongPairMap latency = new LongPairMap(3, 1 << 8);
        while (it.hasNext()) {
            InternalRow r = it.next();
            long send = r.getLong(4), dt = r.getLong(6);
            int partition = r.getInt(2), phase = Identity.phase(send, starts, ends), status = r.getByte(3);
            int go = groups.at(dt, ((long) partition << 8) | phase);
            if (groups.slots[go + 2] == 0) {  // new group: index + 1 stored, names taken once
                t.groups.add(new Group(dt, partition, phase, r.getLong(7),
                        r.isNullAt(0) ? null : r.getUTF8String(0).toString(), r.getUTF8String(1).toString()));
                groups.slots[go + 2] = t.groups.size();
            }
            long group = groups.slots[go + 2] - 1, sec = Math.floorDiv(send, 1000);
            boolean ok = status == OK && !r.isNullAt(5);
            long ack = ok ? r.getLong(5) : 0;
            int o = fine.at((group << 32) | (sec & 0xFFFFFFFFL), ok ? Math.floorDiv(ack, wordMs) : NO_WORD);
            long[] s = fine.slots;
            s[o + PRODUCED]++;
            if (status == OK) s[o + ACKED]++;
            else if (status == FAIL) s[o + FAILED]++;
            else s[o + INDETERMINATE]++;
            if (ok) {
                s[o + MASK] |= 1L << Math.floorMod(ack, wordMs);
                int lo = latency.at(((long) phase << 32) | (sec & 0xFFFFFFFFL), ack - send);
                latency.slots[lo + 2]++;
            }
        }
        t.fine = pack(fine);
        t.latency = pack(latency);
        return t;
    }

    /** A map's states, back to back, with the fine group index moved into the key's high half. */
    static long[] pack(LongPairMap m) {
        long[] out = new long[m.size * m.width];
        int n = 0;
        for (int i = 0; i < m.used.length; i++) {
            if (!m.used[i]) continue;
            System.arraycopy(m.slots, i * m.width, out, n, m.width);
            n += m.width;
        }
        return out;
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
