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
 * Where a group's offsets fall within a task (files of one log read out of order, as Spark packs
 * small files by size), each rising run is a segment of its own, up to RUNS per task.
 * A group whose segments overlap, or that has more runs, or whose prefix runs past what was kept,
 * is named instead, and the caller sorts its rows only (checker.reordering).
 */
public final class Reordering {
    static final int KEEP = 1024;  // first non-reordered seqs kept per segment
    static final int RUNS = 64;  // rising runs of offsets kept apart per group and task

    /** One task's rows of one group: offsets first..last, `reordered` counted within. */
    static final class Segment implements java.io.Serializable {
        long tp, first, last = Long.MIN_VALUE, max = Long.MIN_VALUE, reordered;
        long[] head = new long[8];
        int kept, runs = 1;
        boolean inOrder = true, truncated;
        Segment earlier;  // the same task's previous run of this group's offsets

        /** This segment, or the next run's when `offset` falls (RUNS at most; then not in order). */
        Segment add(long offset, long seq) {
            if (last != Long.MIN_VALUE && offset <= last && inOrder) {
                if (runs == RUNS) {
                    inOrder = false;
                } else {
                    Segment next = new Segment();
                    next.tp = tp;
                    next.earlier = this;
                    next.runs = runs + 1;
                    return next.add(offset, seq);
                }
            }
            if (last == Long.MIN_VALUE) first = offset;
            last = offset;
            if (max != Long.MIN_VALUE && seq < max) { reordered++; return this; }
            max = seq;
            if (kept == KEEP) { truncated = true; return this; }
            if (kept == head.length) head = Arrays.copyOf(head, head.length * 2);
            head[kept++] = seq;
            return this;
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
                for (Segment s = e.getValue(); s != null; s = s.earlier)
                    groups.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).add(s);
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
            Segment now = seg.add(r.getLong(Scan.OFFSET), r.getLong(Scan.SEQ));
            if (now != seg) {  // a new run: the map and the cache hold the group's latest
                segs.put(g, now);
                recent[slot] = now;
            }
        }

        Map<Long, Segment> done() { return segs; }
    }
}
