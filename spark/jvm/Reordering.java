package dcdrill;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.catalyst.InternalRow;

/**
 * Reordering (RECORD.md): per (topic, partition, producer), the audit rows in offset order whose
 * seq is below the largest seq before them. The audit is written in log order, so each task sees
 * a group's rows with rising offsets: it counts its segment's reordered rows as the scan streams
 * them (Scan.java), and hands the driver a summary (offset range, largest seq, and the first of
 * its rows that were not reordered there, whose seqs never fall). The driver orders the segments
 * by offset and counts the rows a segment's predecessors make reordered: a prefix of those first
 * rows. No shuffle.
 * When the rows are not in log order (offsets fall within a task, segments overlap, or a prefix
 * runs past what was kept) it answers null and the caller sorts instead (checker.reordering).
 */
public final class Reordering {
    static final int KEEP = 1024;  // first non-reordered seqs kept per segment

    /** One task's rows of one group: offsets first..last, `reordered` counted within. */
    static final class Segment implements java.io.Serializable {
        long tp, first, last = Long.MIN_VALUE, max = Long.MIN_VALUE, reordered;
        long[] head = new long[8];
        int kept;
        boolean inOrder = true, truncated;

        void add(long offset, long seq) {
            if (last == Long.MIN_VALUE) first = offset;
            else if (offset <= last) inOrder = false;
            last = offset;
            if (max != Long.MIN_VALUE && seq < max) { reordered++; return; }
            max = seq;
            if (kept == KEEP) { truncated = true; return; }
            if (kept == head.length) head = Arrays.copyOf(head, head.length * 2);
            head[kept++] = seq;
        }
    }

    /** The tasks' segments (per group hash) combined: reordered rows per partition hash, or null:
     *  not in log order, sort instead. */
    static Map<Long, Long> combine(List<Map<Long, Segment>> parts) {
        Map<Long, List<Segment>> groups = new HashMap<>();
        for (Map<Long, Segment> part : parts)
            for (Map.Entry<Long, Segment> e : part.entrySet())
                groups.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).add(e.getValue());
        Map<Long, Long> out = new HashMap<>();
        for (List<Segment> segs : groups.values()) {
            segs.sort(Comparator.comparingLong(s -> s.first));
            long count = 0, before = Long.MIN_VALUE, lastOffset = Long.MIN_VALUE;
            for (Segment s : segs) {
                if (!s.inOrder || s.first <= lastOffset) return null;
                int below = 0;
                while (below < s.kept && s.head[below] < before) below++;
                if (below == s.kept && s.truncated) return null;
                count += s.reordered + below;
                before = Math.max(before, s.max);
                lastOffset = s.last;
            }
            out.merge(segs.get(0).tp, count, Long::sum);
        }
        return out;
    }

    /** One task's audit rows (bad rows and null seqs left out), as the scan streams them. */
    static final class Fold {
        private final Map<Long, Segment> segs = new HashMap<>();
        private long lastG;
        private Segment seg;

        void add(InternalRow r) {
            long g = r.getLong(Scan.G);
            if (seg == null || g != lastG) {
                lastG = g;
                seg = segs.get(g);
                if (seg == null) {
                    seg = new Segment();
                    seg.tp = r.getLong(Scan.TP);
                    segs.put(g, seg);
                }
            }
            seg.add(r.getLong(Scan.OFFSET), r.getLong(Scan.SEQ));
        }

        Map<Long, Segment> done() { return segs; }
    }
}
