// SPDX-License-Identifier: Apache-2.0
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
 * A group whose rows are not in log order (offsets fall within a task, segments overlap, or a
 * prefix runs past what was kept) is named instead, and the caller sorts its rows only
 * (checker.reordering).
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

    /** What combine() found: reordered rows per partition hash, over the groups in log order, and
     *  the groups (their hashes) that were not, which the caller sorts. */
    public static final class Result {
        private final Map<Long, Long> reordered;
        private final long[] unordered;

        Result(Map<Long, Long> reordered, long[] unordered) {
            this.reordered = reordered;
            this.unordered = unordered;
        }

        public Map<Long, Long> reordered() { return reordered; }
        public long[] unordered() { return unordered; }
    }

    /** The tasks' segments (per group hash) combined. A group whose rows are not in log order (or
     *  whose prefix ran past what was kept) is left to the caller, by its hash. */
    static Result combine(List<Map<Long, Segment>> parts) {
        Map<Long, List<Segment>> groups = new HashMap<>();
        for (Map<Long, Segment> part : parts)
            for (Map.Entry<Long, Segment> e : part.entrySet())
                groups.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).add(e.getValue());
        Map<Long, Long> out = new HashMap<>();
        List<Long> unordered = new ArrayList<>();
        for (Map.Entry<Long, List<Segment>> g : groups.entrySet()) {
            long count = count(g.getValue());
            if (count < 0) unordered.add(g.getKey());
            else out.merge(g.getValue().get(0).tp, count, Long::sum);
        }
        return new Result(out, unordered.stream().mapToLong(Long::longValue).toArray());
    }

    /** One group's reordered rows, or -1: not in log order. */
    private static long count(List<Segment> segs) {
        segs.sort(Comparator.comparingLong(s -> s.first));
        long count = 0, before = Long.MIN_VALUE, lastOffset = Long.MIN_VALUE;
        for (Segment s : segs) {
            if (!s.inOrder || s.first <= lastOffset) return -1;
            int below = 0;
            while (below < s.kept && s.head[below] < before) below++;
            if (below == s.kept && s.truncated) return -1;
            count += s.reordered + below;
            before = Math.max(before, s.max);
            lastOffset = s.last;
        }
        return count;
    }

    /** One task's audit rows (bad rows and null seqs left out), as the scan streams them. */
    static final class Fold {
        private final Map<Long, Segment> segs = new HashMap<>();
        // A log interleaves its partitions row by row, so the group changes at almost every row:
        // a direct-mapped cache of recent groups spares the map's boxed lookups.
        private final long[] recentG = new long[256];
        private final Segment[] recent = new Segment[256];

        void add(InternalRow r) {
            long g = r.getLong(Scan.G);
            int slot = (int) (g ^ (g >>> 29)) & 255;
            Segment seg = recent[slot];
            if (seg == null || recentG[slot] != g) {
                seg = segs.get(g);
                if (seg == null) {
                    seg = new Segment();
                    seg.tp = r.getLong(Scan.TP);
                    segs.put(g, seg);
                }
                recent[slot] = seg;
                recentG[slot] = g;
            }
            seg.add(r.getLong(Scan.OFFSET), r.getLong(Scan.SEQ));
        }

        Map<Long, Segment> done() { return segs; }
    }
}
