// SPDX-License-Identifier: Apache-2.0
package dcdrill;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.TreeMap;

import org.apache.spark.HashPartitioner;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;

import scala.Tuple2;

/**
 * One mirror flow's counts (spark/mirrors.py names them; RECORD.md, "Mirrors"), folded per
 * identity. The acknowledged source records, the source's log (X) and the copy's (R) arrive as
 * one set of narrowed rows; one shuffle brings each block of 4096 consecutive seqs of a producer
 * to one task, which keeps the block in flat arrays indexed by seq (no per-identity objects and
 * no join), then folds every identity of it into counts, exact lag histograms, and per
 * (producer, partition) the block's runs of R in offset order for the order check. The driver
 * adds the tasks' results; the order runs are joined end to end, which is exact while the runs
 * of one (producer, partition) do not overlap in R's offsets and each starts above every source
 * offset before it; otherwise `inversions` is null and the caller sorts instead.
 */
public final class MirrorFold {
    /** The narrowed rows' columns, by name and in order (spark/mirrors.py narrow_side). */
    public static final String[] COLUMNS = {"idh", "seq", "side", "ts", "offset", "partition"};
    static final int IDH = 0, SEQ = 1, SIDE = 2, TS = 3, OFFSET = 4, PART = 5;
    /** What a row is, by its `side` value: an acknowledgement (ts: ack_ms), a row of X or R (ts:
     *  append time), or a row the failed-over group consumed before or after its failover. */
    public static final String[] SIDES = {"acked", "source", "target", "consumed_before", "consumed_after"};
    static final int ACKED = 0, SOURCE = 1, TARGET = 2, BEFORE = 3, AFTER = 4;
    /** The instants the counts are split at, by name; null where the drill has none. */
    public static final String[] INSTANTS = {"start", "end", "at", "steady_from", "steady_to"};
    static {
        Names.check("MirrorFold.COLUMNS", COLUMNS, "idh", IDH, "seq", SEQ, "side", SIDE, "ts", TS, "offset", OFFSET,
                "partition", PART);
        Names.check("MirrorFold.SIDES", SIDES, "acked", ACKED, "source", SOURCE, "target", TARGET,
                "consumed_before", BEFORE, "consumed_after", AFTER);
    }
    static final int BITS = 12, SIZE = 1 << BITS;
    // The order sort packs (partition, R offset, index in the block) into one long: partitions
    // below 2048 and offsets below 2^40; a record beyond them leaves the order to the caller's sort.
    static final int PART_BITS = 11, OFFSET_BITS = 40;
    // A run ends where R's next offset is this far on: a record copied again much later (after
    // a restart) then sits in a run of its own instead of stretching its block's run over the
    // next blocks', which would leave the runs overlapping and the order to the caller's sort.
    static final long GAP = 1 << 16;
    static final long NONE = Long.MIN_VALUE;

    private MirrorFold() {}

    /** Narrowed rows as the fold's packed chunks, keyed by reducer. */
    public static JavaRDD<Tuple2<Integer, int[]>> packed(Dataset<Row> narrowed, int partitions) {
        if (!Arrays.equals(narrowed.schema().fieldNames(), COLUMNS)) {
            throw new IllegalArgumentException("narrowed rows have columns " + Arrays.toString(narrowed.schema().fieldNames())
                    + ", the mirror fold reads " + Arrays.toString(COLUMNS));
        }
        return narrowed.queryExecution().toRdd().toJavaRDD().mapPartitions(it -> pack(it, partitions));
    }

    /** The flow's counts as JSON (keys: counts, lag, steady, timeline, inversions, failover) from
     *  its sides' packed chunks (packed(), or MirrorBatches.side for a plain Parquet ledger), with
     *  `partitions` reducers. `reached`: the highest offset of R the failed-over group consumed,
     *  per partition; null when no failover is folded here (then `failover` is null). */
    public static String fold(JavaRDD<Tuple2<Integer, int[]>> packed, Map<String, ? extends Number> instants,
                              Map<? extends Number, ? extends Number> reached, int partitions) {
        JavaPairRDD<Integer, int[]> shuffled = shuffled(packed, partitions);
        return fold(shuffled, instants, reached == null ? null : limits(reached));
    }

    /** The same with the failed-over group's consumed rows among the sides as
     *  MirrorBatches.consumed read them: how far the group got in R is known once that read is
     *  done, so the shuffle's map stage runs first and the fold reads its outputs after. */
    public static String foldReaching(JavaRDD<Tuple2<Integer, int[]>> packed, Map<String, ? extends Number> instants,
                                      MirrorBatches.Consumed consumed, int partitions) {
        JavaPairRDD<Integer, int[]> shuffled = shuffled(packed, partitions);
        if (packed.getNumPartitions() == 0) return fold(shuffled, instants, limits(Map.of()));  // nothing read: no map stage
        ShuffleDependency<?, ?, ?> dependency = (ShuffleDependency<?, ?, ?>) shuffled.rdd().dependencies().head();
        try {
            shuffled.context().submitMapStage(dependency).get();
        } catch (org.apache.spark.SparkException e) {
            throw new IllegalStateException("the mirror fold's map stage failed: " + e.getMessage(), e);
        }
        return fold(shuffled, instants, limits(consumed.reached()));
    }

    // Each task packs its rows into chunks per reducer (a block's rows all go to one), and only
    // those chunks are shuffled: Spark SQL's exchange of one row at a time took most of a
    // 10M-record fold.
    private static JavaPairRDD<Integer, int[]> shuffled(JavaRDD<Tuple2<Integer, int[]>> packed, int partitions) {
        return JavaPairRDD.fromJavaRDD(packed).partitionBy(new HashPartitioner(partitions));
    }

    private static long[] limits(Map<? extends Number, ? extends Number> reached) {
        int size = 0;
        for (Number p : reached.keySet()) size = Math.max(size, p.intValue() + 1);
        long[] upTo = new long[size];
        Arrays.fill(upTo, NONE);
        for (Map.Entry<? extends Number, ? extends Number> e : reached.entrySet())
            upTo[e.getKey().intValue()] = e.getValue().longValue();
        return upTo;
    }

    private static String fold(JavaPairRDD<Integer, int[]> shuffled, Map<String, ? extends Number> instants,
                               long[] limits) {
        for (String name : INSTANTS) {
            if (!instants.containsKey(name)) throw new IllegalArgumentException("instant " + name + " missing");
        }
        long[] at = new long[INSTANTS.length];
        for (int i = 0; i < at.length; i++) at[i] = instants.get(INSTANTS[i]) == null ? NONE : instants.get(INSTANTS[i]).longValue();
        List<Part> parts = shuffled.mapPartitions(it -> {
                    Part p = new Part(at, limits);
                    while (it.hasNext()) p.addAll(it.next()._2());
                    return List.of(p.fold()).iterator();
                }).collect();
        Part total = new Part(at, limits);
        boolean unpacked = false;
        for (Part p : parts) {
            total.merge(p);
            unpacked |= p.unpacked;
        }
        return total.json(unpacked ? null : Run.join(parts));
    }

    // A packed chunk, in 32-bit words: c[0] the end of its rows, c[1] how many blocks its table
    // holds, c[2..3] the chunk's base time; the rows from c[4], then the table of the blocks they
    // belong to (producer hash as two words, block number: seq >>> BITS). A row starts with
    // seq & (SIZE - 1) | side << BITS | (its block's index in the table) << (BITS + 3) and
    // carries only what its side needs: an acknowledgement adds its time less the base; a row of
    // X or R that time, partition + 1 and its offset (unsigned; -1: none); a consumed row nothing
    // more. The 40M rows of a 10M-record flow shuffle 440 MB (one to three longs a row: 720 MB;
    // five: 1.5 GB), and the fold finds a row's block from its chunk's table, not a lookup per row. A
    // row whose values do not fit (side WIDE) carries them all: producer hash, seq, time and
    // offset (NONE: null) as two words each, then side, then partition (-1: null).
    static final int WIDE = 7, HEAD = 4, CHUNK = 1 << 17, WIDE_WORDS = 11;
    static final long NO_OFFSET = 0xFFFFFFFFL;

    /** One task's narrowed rows, packed; rows without an identity or a time are left out, as the
     *  fold would skip them. */
    static Iterator<Tuple2<Integer, int[]>> pack(Iterator<InternalRow> rows, int partitions) {
        return new Packing(partitions) {
            @Override boolean fill() {
                while (rows.hasNext()) {
                    InternalRow r = rows.next();
                    if (r.isNullAt(IDH) || r.isNullAt(SEQ) || r.isNullAt(TS)) continue;
                    add(r.getLong(IDH), r.getLong(SEQ), r.getLong(TS), r.isNullAt(OFFSET) ? NONE : r.getLong(OFFSET),
                            r.getByte(SIDE) & 0xFF, r.isNullAt(PART) ? -1 : r.getInt(PART));
                    if (packed()) return true;
                }
                return false;
            }
        };
    }

    /** A task's rows packed into chunks per reducer (a block's rows all go to one) and handed on
     *  as each fills, so that a task never holds more than a chunk per reducer. */
    abstract static class Packing implements Iterator<Tuple2<Integer, int[]>> {
        private final int partitions;
        private final Chunk[] chunks;
        private final ArrayDeque<Tuple2<Integer, int[]>> ready = new ArrayDeque<>();
        private boolean flushed;

        Packing(int partitions) {
            this.partitions = partitions;
            this.chunks = new Chunk[partitions];
        }

        /** Packs more rows (add()); false once the task has none left. */
        abstract boolean fill();

        void add(long idh, long seq, long ts, long offset, int side, int partition) {
            int p = LongPairMap.partition(idh, seq >>> BITS, partitions);
            Chunk c = chunks[p];
            if (c == null) c = chunks[p] = new Chunk();
            c.add(idh, seq, ts, offset, side, partition);
            if (c.full()) {
                ready.add(new Tuple2<>(p, c.done()));
                chunks[p] = null;
            }
        }

        /** Whether a full chunk is ready to hand on. */
        boolean packed() { return !ready.isEmpty(); }

        @Override public boolean hasNext() {
            while (ready.isEmpty() && !flushed) {
                if (!fill()) {
                    for (int p = 0; p < partitions; p++) {
                        if (chunks[p] != null) ready.add(new Tuple2<>(p, chunks[p].done()));
                    }
                    flushed = true;
                }
            }
            return !ready.isEmpty();
        }

        @Override public Tuple2<Integer, int[]> next() {
            if (!hasNext()) throw new NoSuchElementException();
            return ready.poll();
        }
    }

    /** A chunk being packed (the layout above), with its blocks' indexes. */
    static final class Chunk {
        private final int[] c = new int[CHUNK];
        private final LongPairMap blocks = new LongPairMap(3, 64);
        private int n = HEAD;
        private long base = NONE;

        void add(long idh, long seq, long ts, long offset, int side, int partition) {
            boolean timed = side == ACKED || side == SOURCE || side == TARGET;
            if (timed && base == NONE) base = ts;
            boolean fits = seq >= 0 && (seq >>> BITS) <= Integer.MAX_VALUE && side < WIDE
                    && (!timed || (ts - base == (int) (ts - base)));
            if (side == SOURCE || side == TARGET) {
                fits &= partition >= -1 && partition < Integer.MAX_VALUE
                        && (offset == NONE || offset >= 0 && offset < NO_OFFSET);
            }
            if (!fits) {
                c[n] = WIDE << BITS;
                put(n + 1, idh);
                put(n + 3, seq);
                put(n + 5, ts);
                put(n + 7, offset);
                c[n + 9] = side;
                c[n + 10] = partition;
                n += WIDE_WORDS;
                return;
            }
            int o = blocks.at(idh, seq >>> BITS);
            if (blocks.slots[o + 2] == 0) blocks.slots[o + 2] = blocks.size;  // index + 1
            c[n++] = (int) (seq & (SIZE - 1)) | side << BITS | (int) (blocks.slots[o + 2] - 1) << (BITS + 3);
            if (timed) c[n++] = (int) (ts - base);
            if (side == SOURCE || side == TARGET) {
                c[n++] = partition + 1;
                c[n++] = offset == NONE ? (int) NO_OFFSET : (int) offset;
            }
        }

        private void put(int at, long v) {
            c[at] = (int) (v >>> 32);
            c[at + 1] = (int) v;
        }

        boolean full() { return n + WIDE_WORDS > c.length; }

        /** The chunk as shuffled: its rows, then its blocks by index. */
        int[] done() {
            int[] out = Arrays.copyOf(c, n + 3 * blocks.size);
            out[0] = n;
            out[1] = blocks.size;
            out[2] = (int) (base >>> 32);
            out[3] = (int) base;
            long[] s = blocks.slots;
            for (int o = 0; o < s.length; o += 3) {
                if (s[o + 2] == 0) continue;
                int at = n + 3 * (int) (s[o + 2] - 1);
                out[at] = (int) (s[o] >>> 32);
                out[at + 1] = (int) s[o];
                out[at + 2] = (int) s[o + 1];
            }
            return out;
        }
    }

    static long word2(int[] c, int at) {
        return (long) c[at] << 32 | (c[at + 1] & 0xFFFFFFFFL);
    }

    /** A block of 4096 seqs of one producer: what each ledger holds of each seq. */
    static final class Block {
        final long[] ack = new long[SIZE], srcOff = new long[SIZE], srcTs = new long[SIZE], dstOff = new long[SIZE],
                dstTs = new long[SIZE];
        final int[] srcN = new int[SIZE], dstN = new int[SIZE], part = new int[SIZE], dstPart = new int[SIZE];
        final byte[] consumed = new byte[SIZE];  // 1: before the failover, 2: after
        final long idh, first;

        Block(long idh, long first) {
            this.idh = idh;
            this.first = first;
            Arrays.fill(ack, NONE);
            Arrays.fill(srcOff, Long.MAX_VALUE);
            Arrays.fill(srcTs, Long.MAX_VALUE);
            Arrays.fill(dstOff, Long.MAX_VALUE);
            Arrays.fill(dstTs, Long.MAX_VALUE);
        }
    }

    /** One (producer, partition)'s mirrored records of one block, in R's offset order. */
    static final class Run implements java.io.Serializable {
        long idh, partition, firstDst, firstSrc, lastDst, maxSrc, inversions;

        /** Inversions over every (producer, partition) (RECORD.md: a record R holds after one whose
         *  source offset is higher): each run's own, joined end to end. Exact while every run starts
         *  above the source offsets of the runs before it, so that only its own records can be
         *  behind one of its own; null when a run does not, or when runs overlap in R. */
        static Long join(List<Part> parts) {
            Map<List<Long>, List<Run>> groups = new HashMap<>();
            for (Part p : parts)
                for (Run r : p.runs) groups.computeIfAbsent(List.of(r.idh, r.partition), k -> new ArrayList<>()).add(r);
            long total = 0;
            for (List<Run> runs : groups.values()) {
                runs.sort(Comparator.comparingLong(r -> r.firstDst));
                Run prev = null;
                long maxSrc = Long.MIN_VALUE;
                for (Run r : runs) {
                    if (prev != null && (r.firstDst <= prev.lastDst || r.firstSrc < maxSrc)) return null;
                    total += r.inversions;
                    maxSrc = Math.max(maxSrc, r.maxSrc);
                    prev = r;
                }
            }
            return total;
        }
    }

    /** One task's fold; the driver merges them (`merge`). */
    static final class Part implements java.io.Serializable {
        static final String[] COUNTED = {"acked", "mirrored", "not_mirrored", "absent", "dups", "phantoms", "before",
            "during", "rpo_n"};
        static final String[] FAILOVER = {"processed_before", "processed_after", "redelivered", "skipped", "unread"};
        final long[] at, reached;  // reached: per partition of R (NONE: not reached), null without a failover
        final long[] counts = new long[COUNTED.length], failover = new long[FAILOVER.length];
        long rpoOldest = Long.MAX_VALUE, lastAck = NONE, caught = NONE;
        final TreeMap<Long, Long> lag = new TreeMap<>(), steady = new TreeMap<>();
        final TreeMap<Long, TreeMap<Long, Long>> perSecond = new TreeMap<>();
        final List<Run> runs = new ArrayList<>();
        boolean unpacked;  // a partition or offset too large to pack: no inversion count here
        transient LongPairMap index;
        transient List<Block> blocks;
        // Counted as the blocks fold, without boxing: (0, lag) and (1, lag) for every and the
        // steady lags, (second, lag) per second; turned into the sorted maps above at the end.
        transient LongPairMap lags, seconds;

        Part(long[] at, long[] reached) {
            this.at = at;
            this.reached = reached;
        }

        long reachedIn(int partition) {
            return reached == null || partition < 0 || partition >= reached.length ? NONE : reached[partition];
        }

        /** A chunk of packed rows (pack()). */
        void addAll(int[] c) {
            int end = c[0], table = c[1];
            long base = word2(c, 2);
            Block[] in = new Block[table];
            for (int k = 0; k < table; k++) {
                int at = end + 3 * k;
                in[k] = block(word2(c, at), c[at + 2] & 0xFFFFFFFFL);
            }
            for (int n = HEAD; n < end; ) {
                int h = c[n++], side = (h >>> BITS) & 7;
                if (side == WIDE) {
                    long idh = word2(c, n), seq = word2(c, n + 2);
                    add(block(idh, seq >>> BITS), (int) (seq & (SIZE - 1)), word2(c, n + 4), word2(c, n + 6),
                            c[n + 8], c[n + 9]);
                    n += WIDE_WORDS - 1;
                    continue;
                }
                Block b = in[h >>> (BITS + 3)];
                int i = h & (SIZE - 1);
                if (side == ACKED) add(b, i, base + c[n++], NONE, side, -1);
                else if (side == SOURCE || side == TARGET) {
                    long offset = c[n + 2] & 0xFFFFFFFFL;
                    add(b, i, base + c[n], offset == NO_OFFSET ? NONE : offset, side, c[n + 1] - 1);
                    n += 3;
                } else add(b, i, 0, NONE, side, -1);
            }
        }

        /** The block of seqs `number` (seq >>> BITS) of a producer, made when first seen. */
        Block block(long idh, long number) {
            if (index == null) {
                index = new LongPairMap(3, 1024);
                blocks = new ArrayList<>();
            }
            int o = index.at(idh, number);
            if (index.slots[o + 2] == 0) {
                blocks.add(new Block(idh, number << BITS));
                index.slots[o + 2] = blocks.size();
            }
            return blocks.get((int) index.slots[o + 2] - 1);
        }

        void add(Block b, int i, long ts, long offset, int side, int partition) {
            switch (side) {
                case ACKED -> b.ack[i] = Math.max(b.ack[i], ts);
                case SOURCE -> {
                    b.srcN[i]++;
                    b.srcOff[i] = Math.min(b.srcOff[i], offset);
                    b.srcTs[i] = Math.min(b.srcTs[i], ts);
                    b.part[i] = partition;
                }
                case TARGET -> {
                    b.dstN[i]++;
                    b.dstOff[i] = Math.min(b.dstOff[i], offset);
                    b.dstTs[i] = Math.min(b.dstTs[i], ts);
                    b.dstPart[i] = partition;
                    long upTo = reachedIn(partition);
                    if (upTo == NONE || offset > upTo) failover[4]++;  // a row the group never got to
                }
                case BEFORE -> b.consumed[i] |= 1;
                case AFTER -> b.consumed[i] |= 2;
                default -> throw new IllegalArgumentException("side " + side + " is none of " + Arrays.toString(SIDES));
            }
        }

        Part fold() {
            if (blocks == null) return this;
            lags = new LongPairMap(3, 1024);
            seconds = new LongPairMap(3, 1024);
            for (Block b : blocks) fold(b);
            long[] l = lags.states();
            for (int o = 0; o < l.length; o += 3) (l[o] == 0 ? lag : steady).merge(l[o + 1], l[o + 2], Long::sum);
            long[] s = seconds.states();
            for (int o = 0; o < s.length; o += 3)
                perSecond.computeIfAbsent(s[o], k -> new TreeMap<>()).merge(s[o + 1], s[o + 2], Long::sum);
            index = lags = seconds = null;
            blocks = null;
            return this;
        }

        private static void count(LongPairMap m, long k1, long k2) {
            int o = m.at(k1, k2);
            m.slots[o + 2]++;
        }

        private void fold(Block b) {
            long start = at[0], end = at[1], instant = at[2], steadyFrom = at[3], steadyTo = at[4];
            long[] order = new long[SIZE];  // mirrored seqs as (partition, R offset, index) packed for one sort
            int m = 0;
            for (int i = 0; i < SIZE; i++) {
                boolean ack = b.ack[i] != NONE, inX = b.srcN[i] > 0, inR = b.dstN[i] > 0;
                if (b.consumed[i] != 0 || inR) {
                    boolean before = (b.consumed[i] & 1) != 0, after = (b.consumed[i] & 2) != 0;
                    long upTo = inR ? reachedIn(b.dstPart[i]) : NONE;
                    if (before) failover[0]++;
                    if (after) failover[1]++;
                    if (before && after) failover[2]++;
                    if (upTo != NONE && b.dstOff[i] <= upTo && !before && !after) failover[3]++;
                }
                if (!ack && !inX && !inR) continue;
                long ackMs = b.ack[i];
                boolean stranded = ack && inX && !inR;
                if (ack) counts[0]++;
                if (ack && inR) counts[1]++;
                if (stranded) counts[2]++;
                if (ack && !inX) counts[3]++;
                if (inX && inR) counts[4] += Math.max(0, b.dstN[i] - b.srcN[i]);
                if (inR && !inX) counts[5]++;
                if (stranded && start != NONE) {
                    if (ackMs < start) counts[6]++;
                    else if (ackMs <= end) counts[7]++;
                }
                if (ack && instant != NONE && ackMs <= instant) {
                    lastAck = Math.max(lastAck, ackMs);
                    if (!inR || b.dstTs[i] > instant) {
                        counts[8]++;
                        rpoOldest = Math.min(rpoOldest, ackMs);
                    }
                }
                if (ack && inR && end != NONE && ackMs <= end) caught = Math.max(caught, b.dstTs[i]);
                if (inX && inR) {
                    long lagMs = b.dstTs[i] - b.srcTs[i];
                    count(lags, 0, lagMs);
                    if (start == NONE || (b.srcTs[i] < steadyTo && b.srcTs[i] >= steadyFrom)) count(lags, 1, lagMs);
                    count(seconds, Math.floorDiv(b.srcTs[i], 1000L), lagMs);
                    if (b.part[i] >= 1 << PART_BITS || b.dstOff[i] < 0 || b.dstOff[i] >= 1L << OFFSET_BITS) unpacked = true;
                    else order[m++] = (long) b.part[i] << (OFFSET_BITS + BITS) | b.dstOff[i] << BITS | i;
                }
            }
            Arrays.sort(order, 0, m);
            Run run = null;
            for (int k = 0; k < m; k++) {
                int part = (int) (order[k] >>> (OFFSET_BITS + BITS)), i = (int) (order[k] & (SIZE - 1));
                if (run == null || run.partition != part || b.dstOff[i] - run.lastDst > GAP) {
                    run = new Run();
                    run.idh = b.idh;
                    run.partition = part;
                    run.firstDst = b.dstOff[i];
                    run.firstSrc = run.maxSrc = b.srcOff[i];
                    runs.add(run);
                } else if (b.srcOff[i] < run.maxSrc) {
                    run.inversions++;  // behind a record R holds earlier, however many places back
                }
                run.lastDst = b.dstOff[i];
                run.maxSrc = Math.max(run.maxSrc, b.srcOff[i]);
            }
        }

        void merge(Part p) {
            for (int i = 0; i < counts.length; i++) counts[i] += p.counts[i];
            for (int i = 0; i < failover.length; i++) failover[i] += p.failover[i];
            rpoOldest = Math.min(rpoOldest, p.rpoOldest);
            lastAck = Math.max(lastAck, p.lastAck);
            caught = Math.max(caught, p.caught);
            p.lag.forEach((k, v) -> lag.merge(k, v, Long::sum));
            p.steady.forEach((k, v) -> steady.merge(k, v, Long::sum));
            p.perSecond.forEach((sec, h) -> {
                TreeMap<Long, Long> mine = perSecond.computeIfAbsent(sec, k -> new TreeMap<>());
                h.forEach((k, v) -> mine.merge(k, v, Long::sum));
            });
        }

        /** The smallest lag with at least q of the lags at or below it (exact: the lags are whole ms). */
        static Long quantile(TreeMap<Long, Long> h, long n, double q) {
            if (n == 0) return null;
            long need = Math.max(1, (long) Math.ceil(q * n)), seen = 0;
            for (Map.Entry<Long, Long> e : h.entrySet()) {
                seen += e.getValue();
                if (seen >= need) return e.getKey();
            }
            return h.lastKey();
        }

        static String stats(TreeMap<Long, Long> h) {
            long n = 0;
            for (long v : h.values()) n += v;
            return "{\"p50\":" + quantile(h, n, 0.5) + ",\"p99\":" + quantile(h, n, 0.99) + ",\"max\":"
                    + (h.isEmpty() ? null : h.lastKey()) + ",\"n\":" + n + "}";
        }

        String json(Long inversions) {
            StringBuilder sb = new StringBuilder("{\"counts\":{");
            for (int i = 0; i < COUNTED.length; i++) sb.append(i > 0 ? "," : "").append('"').append(COUNTED[i]).append("\":").append(counts[i]);
            sb.append(",\"rpo_oldest\":").append(rpoOldest == Long.MAX_VALUE ? null : rpoOldest)
              .append(",\"last_ack\":").append(lastAck == NONE ? null : lastAck)
              .append(",\"caught\":").append(caught == NONE ? null : caught).append("}");
            sb.append(",\"lag\":").append(stats(lag)).append(",\"steady\":").append(stats(steady));
            sb.append(",\"timeline\":[");
            boolean firstSec = true;
            for (Map.Entry<Long, TreeMap<Long, Long>> e : perSecond.entrySet()) {
                long n = 0;
                for (long v : e.getValue().values()) n += v;
                sb.append(firstSec ? "" : ",").append("{\"sec\":").append(e.getKey()).append(",\"p50\":")
                  .append(quantile(e.getValue(), n, 0.5)).append(",\"p99\":").append(quantile(e.getValue(), n, 0.99))
                  .append(",\"records\":").append(n).append("}");
                firstSec = false;
            }
            sb.append("],\"inversions\":").append(inversions).append(",\"failover\":");
            if (reached == null) sb.append("null");
            else {
                sb.append("{");
                for (int i = 0; i < FAILOVER.length; i++)
                    sb.append(i > 0 ? "," : "").append('"').append(FAILOVER[i]).append("\":").append(failover[i]);
                sb.append("}");
            }
            sb.append("}");
            return sb.toString();
        }
    }
}
