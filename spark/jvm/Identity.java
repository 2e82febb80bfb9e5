// SPDX-License-Identifier: Apache-2.0
package dcdrill;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;

import org.apache.spark.HashPartitioner;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import scala.Tuple2;

/**
 * The identity pass (spark/identities.py explains it): the rows of the screen's suspicious
 * buckets only, read back from the scan's cache (Scan.java), folded per identity (producer hash,
 * seq) on a packed occurrence count and the lowest and highest position seen; one shuffle brings
 * an identity's partial states together, where its flags are set. Anomalous identities are
 * summed per split of their produced row (phase, DC and topic, partition, second).
 */
public final class Identity {
    static final int P_OK = Screen.P_OK, P_FAIL = Screen.P_FAIL, P_INFO = Screen.P_INFO, A_ROW = Screen.A_ROW,
            C_ROW = Screen.C_ROW, FIELD = 16;
    // An identity's state: key (idh, seq), packed counts (produced | audit << 16 | consumed << 32),
    // rows, the produced row's kind, acknowledged position, audit and consumed position range,
    // the produced row's split keys, and which of the optional ones are set.
    // XOK, XA, XC: its rows' shares of the screen's certificates (Screen.java).
    static final int PACKED = 2, ROWS = 3, PKIND = 4, PPOS = 5, ALO = 6, AHI = 7, CLO = 8, CHI = 9,
            SEND = 10, DT = 11, PART = 12, HAS = 13, XOK = 14, XA = 15, XC = 16, WIDTH = 17;
    static final long HAS_PKIND = 1, HAS_PPOS = 2, HAS_A = 4, HAS_C = 8, HAS_SPLIT = 16;
    /** The counted flags, in the order spark/identities.py reads them. */
    public static final String[] COUNTED = {"acked_lost", "acked_unseen", "failed_present", "indeterminate_present",
        "duplicates_in_log", "duplicates_delivered", "phantoms", "ack_offset_mismatch", "mismatch_candidates",
        "divergent_candidates", "produced_twice", "too_many_copies"};
    static final int LOST = 0, UNSEEN = 1, FAILED_PRESENT = 2, INFO_PRESENT = 3, DUP_LOG = 4, DUP_DELIVERED = 5,
            PHANTOMS = 6, MISMATCH = 7, MISMATCH_CAND = 8, DIVERGENT_CAND = 9, PRODUCED_TWICE = 10, TOO_MANY = 11;
    static {
        Names.check("Identity.COUNTED", COUNTED, "acked_lost", LOST, "acked_unseen", UNSEEN, "failed_present",
                FAILED_PRESENT, "indeterminate_present", INFO_PRESENT, "duplicates_in_log", DUP_LOG,
                "duplicates_delivered", DUP_DELIVERED, "phantoms", PHANTOMS, "ack_offset_mismatch", MISMATCH,
                "mismatch_candidates", MISMATCH_CAND, "divergent_candidates", DIVERGENT_CAND, "produced_twice",
                PRODUCED_TWICE, "too_many_copies", TOO_MANY);
    }

    /** The examples the report lists: the first EXAMPLES lost or doubled identities by send time. */
    public static final int EXAMPLES = 100;
    /** What an example is (spark/identities.py names them). */
    public static final String[] EXAMPLE_KINDS = {"lost", "duplicated_in_log", "duplicated_delivered"};
    static final int EX_WIDTH = 5;  // idh, seq, kind, send_ms (Long.MIN_VALUE: no produced row), partition

    /** What the pass hands back: anomalies per split (JSON lines), the candidates that need a
     *  second look at their positions (idh, seq, mismatch_candidates, divergent_candidates), the
     *  buckets whose other seqs must be looked at too (null: none), and the first examples. */
    public static final class Result {
        private final String splits;
        private final Dataset<Row> candidates;
        private final Screen.Result again;
        private final String examples;

        Result(String splits, Dataset<Row> candidates, Screen.Result again, String examples) {
            this.splits = splits;
            this.candidates = candidates;
            this.again = again;
            this.examples = examples;
        }

        public String splits() { return splits; }
        /** JSON lines {idh, seq, kind, send_ms, partition}, earliest send first, at most EXAMPLES. */
        public String examples() { return examples; }
        public Dataset<Row> candidates() { return candidates; }
        public Screen.Result again() { return again; }
    }

    /** One reduce partition's answer: anomalies per split, candidates (idh, seq, flags), and the
     *  certificate shares of the identities seen, per bucket (key, 0, XOK, XA, XC). */
    static final class Judged implements java.io.Serializable {
        final Map<SplitKey, long[]> splits = new HashMap<>();
        long[] candidates = new long[0];
        long[] shares = new long[0];
        long[] examples = new long[0];
    }

    /** The scan's kept rows, and the consumed ledger's narrowed rows when some bucket's consumed rows
     *  differ from its audit rows (else null); faults: start and end (Long.MAX_VALUE while open) of
     *  each fault, for the phase of a produced row. Only the seqs the screen flagged are looked at;
     *  a bucket whose certificates, less those seqs' shares, still differ has a misplaced record
     *  among its other seqs: those come back in `again`, for a second run. */
    public static Result run(Scan scan, Dataset<Row> consumed, Screen.Result screen, long[] starts, long[] ends) {
        SparkSession spark = SparkSession.active();
        JavaRDD<long[]> rows = consumed == null ? scan.rows() : scan.rows().union(Scan.pack(consumed));
        int partitions = reducers(screen, scan.partitions);
        Broadcast<BucketSet> look = JavaSparkContext.fromSparkContext(spark.sparkContext())
                .broadcast(new BucketSet(screen.keys, screen.mirror, screen.masks));
        List<Judged> judged = rows.mapPartitionsToPair(it -> new Fold(it, look.value(), partitions))
                .partitionBy(new HashPartitioner(partitions))
                .mapPartitions(it -> List.of(judge(it, starts, ends)).iterator()).collect();
        look.destroy();
        Map<SplitKey, long[]> splits = new HashMap<>();
        List<Row> candidates = new ArrayList<>();
        Map<Long, long[]> shares = new HashMap<>();
        PriorityQueue<long[]> examples = new PriorityQueue<>(Identity::later);
        for (Judged part : judged) {
            for (int i = 0; i < part.examples.length; i += EX_WIDTH) {
                keep(examples, Arrays.copyOfRange(part.examples, i, i + EX_WIDTH));
            }
            part.splits.forEach((k, v) -> splits.merge(k, v, Identity::add));
            long[] c = part.candidates;
            for (int i = 0; i < c.length; i += 4) candidates.add(RowFactory.create(c[i], c[i + 1], (int) c[i + 2], (int) c[i + 3]));
            for (int i = 0; i < part.shares.length; i += 5) {
                long[] x = shares.computeIfAbsent(part.shares[i], k -> new long[3]);
                for (int k = 0; k < 3; k++) x[k] ^= part.shares[i + 2 + k];
            }
        }
        StructType schema = new StructType().add("idh", DataTypes.LongType).add("seq", DataTypes.LongType)
                .add("mismatch_candidates", DataTypes.IntegerType).add("divergent_candidates", DataTypes.IntegerType);
        StringBuilder json = new StringBuilder();
        for (Map.Entry<SplitKey, long[]> e : splits.entrySet()) e.getKey().json(e.getValue(), json);
        List<long[]> first = new ArrayList<>(examples);
        first.sort((a, b) -> later(b, a));
        StringBuilder ex = new StringBuilder();
        for (long[] e : first) {
            ex.append("{\"idh\":").append(e[0]).append(",\"seq\":").append(e[1]).append(",\"kind\":\"")
              .append(EXAMPLE_KINDS[(int) e[2]]).append("\",\"send_ms\":")
              .append(e[3] == Long.MIN_VALUE ? "null" : Long.toString(e[3]))
              .append(",\"partition\":").append(e[4] < 0 ? "null" : Long.toString(e[4])).append("}\n");
        }
        return new Result(json.toString(), spark.createDataFrame(candidates, schema), again(screen, shares), ex.toString());
    }

    /** The heap's order: the latest send (then the highest seq) first, so the root is dropped. */
    static int later(long[] a, long[] b) {
        int c = Long.compare(b[3], a[3]);
        return c != 0 ? c : Long.compare(b[1], a[1]);
    }

    /** Keep `e` among the EXAMPLES earliest (a max-heap of them). */
    static void keep(PriorityQueue<long[]> heap, long[] e) {
        heap.add(e);
        if (heap.size() > EXAMPLES) heap.poll();
    }

    /** The buckets whose certificates, less the shares of the seqs looked at, still differ: their
     *  other seqs, to be looked at in a second run (which has nothing left to check). */
    static Screen.Result again(Screen.Result screen, Map<Long, long[]> shares) {
        if (screen.certs == null) return null;
        List<Integer> left = new ArrayList<>();
        for (int j = 0; j < screen.keys.length; j++) {
            if (screen.masks[j] == -1L) continue;
            long[] x = shares.getOrDefault(screen.keys[j], new long[3]);
            long ok = screen.certs[3 * j] ^ x[0], a = screen.certs[3 * j + 1] ^ x[1], c = screen.certs[3 * j + 2] ^ x[2];
            if (ok != a || a != c) left.add(j);
        }
        if (left.isEmpty()) return null;
        long[] keys = new long[left.size()], masks = new long[left.size()];
        boolean[] mirror = new boolean[left.size()];
        long unmirrored = 0;
        for (int i = 0; i < keys.length; i++) {
            int j = left.get(i);
            keys[i] = screen.keys[j];
            mirror[i] = screen.mirror[j];
            masks[i] = ~screen.masks[j];
            if (!mirror[i]) unmirrored++;
        }
        return new Screen.Result(keys, mirror, masks, null, new long[] {keys.length, unmirrored, 0, 0, 0});
    }

    // Memory bounds: a map task hands its states on whenever it holds FOLD_LIMIT identities (a
    // reducer merges any number of partial states of one identity), and there are enough reduce
    // tasks that each judges at most about JUDGE_LIMIT identities. A state is WIDTH longs, and an
    // open-addressing map holds up to 4 slots per entry: at most ~70 MB and ~570 MB per task.
    static final int FOLD_LIMIT = 1 << 17, JUDGE_LIMIT = 1 << 20;

    /** Reduce tasks for the seqs the screen flagged (a bucket with none flagged counts all 64). */
    static int reducers(Screen.Result screen, int minPartitions) {
        long looked = 0;
        for (long m : screen.masks) looked += Long.bitCount(m);
        return (int) Math.max(minPartitions, Math.min(1 << 16, (looked + JUDGE_LIMIT - 1) / JUDGE_LIMIT));
    }

    /** One task: the packed rows (Scan.Packer) of suspicious buckets, folded per identity; each
     *  FOLD_LIMIT identities leave as one block per reduce partition. */
    static final class Fold implements Iterator<Tuple2<Integer, long[]>> {
        private final Iterator<long[]> in;
        private final BucketSet look;
        private final int partitions;
        private Iterator<Tuple2<Integer, long[]>> out = java.util.Collections.emptyIterator();
        private long lastIdh = 0, lastB = Long.MIN_VALUE, mask = 0;
        private int mirror = BucketSet.ABSENT;
        private boolean done;

        Fold(Iterator<long[]> in, BucketSet look, int partitions) {
            this.in = in;
            this.look = look;
            this.partitions = partitions;
        }

        @Override public boolean hasNext() {
            while (!out.hasNext() && !done) out = batch().iterator();
            return out.hasNext();
        }

        @Override public Tuple2<Integer, long[]> next() {
            if (!hasNext()) throw new java.util.NoSuchElementException();
            return out.next();
        }

        private List<Tuple2<Integer, long[]>> batch() {
            LongPairMap f = new LongPairMap(WIDTH, 1 << 12);
            while (f.size < FOLD_LIMIT && in.hasNext()) add(f, in.next());
            done = !in.hasNext();
            return f.size == 0 ? List.of() : f.blocks(partitions, new long[0]);
        }

        private void add(LongPairMap f, long[] chunk) {
            for (int i = 1, end = (int) chunk[0]; i < end; ) {
                long idh = chunk[i], seq = chunk[i + 1];
                int kind = (int) (chunk[i + 2] & 0xFF), at = i;
                i += kind <= P_INFO ? 6 : 4;
                if (idh != lastIdh || (seq >> Screen.BITS) != lastB) {
                    lastIdh = idh;
                    lastB = seq >> Screen.BITS;
                    int slot = look.find(Screen.bucketKey(idh, lastB));
                    mirror = slot < 0 ? BucketSet.ABSENT : look.state[slot];
                    mask = slot < 0 ? 0 : look.masks[slot];
                }
                if (mirror == BucketSet.ABSENT || (mask & (1L << (seq & 63))) == 0) continue;
                if (kind == C_ROW && mirror == BucketSet.MIRROR) continue;  // the audit row stands in for it
                Identity.add(f, chunk, at, mirror == BucketSet.MIRROR);
            }
        }
    }

    /** One packed row (chunk[at...], Scan.Packer) into its identity's state; `mirror`: an audit
     *  row stands in for its consumed twin. */
    static void add(LongPairMap f, long[] chunk, int at, boolean mirror) {
        long meta = chunk[at + 2], pos = chunk[at + 3];
        int kind = (int) (meta & 0xFF);
        boolean hasPos = (meta & Scan.META_POS) != 0;
        int o = f.at(chunk[at], chunk[at + 1]);
        long[] s = f.slots;
        s[o + ROWS]++;
        if (kind <= P_INFO) {
            s[o + PACKED] += 1;
            s[o + PKIND] = (s[o + HAS] & HAS_PKIND) == 0 ? kind : Math.max(s[o + PKIND], kind);
            s[o + HAS] |= HAS_PKIND;
            if (kind == P_OK) {
                s[o + XOK] ^= Screen.okCertificate(hasPos, pos);
                if (hasPos) {
                    s[o + PPOS] = (s[o + HAS] & HAS_PPOS) == 0 ? pos : Math.max(s[o + PPOS], pos);
                    s[o + HAS] |= HAS_PPOS;
                }
            }
            s[o + SEND] = chunk[at + 4];
            s[o + DT] = chunk[at + 5];
            s[o + PART] = (int) (meta >> 32);
            s[o + HAS] |= HAS_SPLIT;
        } else if (kind == A_ROW) {
            range(s, o, ALO, HAS_A, pos, pos);
            s[o + PACKED] += 1L << FIELD;
            s[o + XA] ^= pos;
            if (mirror) {
                s[o + XC] ^= pos;
                range(s, o, CLO, HAS_C, pos, pos);
                s[o + PACKED] += 1L << 2 * FIELD;
                s[o + ROWS]++;
            }
        } else {
            range(s, o, CLO, HAS_C, pos, pos);
            s[o + PACKED] += 1L << 2 * FIELD;
            s[o + XC] ^= pos;
        }
    }

    static void range(long[] s, int o, int lo, long has, long min, long max) {
        if ((s[o + HAS] & has) == 0) {
            s[o + lo] = min;
            s[o + lo + 1] = max;
            s[o + HAS] |= has;
        } else {
            s[o + lo] = Math.min(s[o + lo], min);
            s[o + lo + 1] = Math.max(s[o + lo + 1], max);
        }
    }

    /** One reduce partition: merge each identity's states, set its flags, sum them per split. */
    static Judged judge(Iterator<Tuple2<Integer, long[]>> it, long[] starts, long[] ends) {
        LongPairMap f = new LongPairMap(WIDTH, 1 << 12);
        while (it.hasNext()) {
            long[] blk = it.next()._2();
            for (int i = 0; i < blk.length; i += WIDTH) {
                int o = f.at(blk[i], blk[i + 1]);
                long[] s = f.slots;
                long has = blk[i + HAS];
                s[o + PACKED] += blk[i + PACKED];
                s[o + ROWS] += blk[i + ROWS];
                if ((has & HAS_PKIND) != 0) {
                    s[o + PKIND] = (s[o + HAS] & HAS_PKIND) == 0 ? blk[i + PKIND] : Math.max(s[o + PKIND], blk[i + PKIND]);
                }
                if ((has & HAS_PPOS) != 0) {
                    s[o + PPOS] = (s[o + HAS] & HAS_PPOS) == 0 ? blk[i + PPOS] : Math.max(s[o + PPOS], blk[i + PPOS]);
                }
                if ((has & HAS_A) != 0) range(s, o, ALO, HAS_A, blk[i + ALO], blk[i + AHI]);
                if ((has & HAS_C) != 0) range(s, o, CLO, HAS_C, blk[i + CLO], blk[i + CHI]);
                if ((has & HAS_SPLIT) != 0) {  // one produced row per identity: any copy will do
                    s[o + SEND] = blk[i + SEND];
                    s[o + DT] = blk[i + DT];
                    s[o + PART] = blk[i + PART];
                }
                s[o + HAS] |= has;
                for (int k = XOK; k <= XC; k++) s[o + k] ^= blk[i + k];
            }
        }
        Judged out = new Judged();
        LongPairMap shares = new LongPairMap(5, 1 << 10);
        long[] cand = new long[64];
        int nc = 0;
        long[] s = f.slots;
        int[] flag = new int[COUNTED.length];
        PriorityQueue<long[]> examples = new PriorityQueue<>(Identity::later);
        for (int i = 0; i < f.used.length; i++) {
            if (!f.used[i]) continue;
            int o = i * WIDTH;
            int x = shares.at(Screen.bucketKey(s[o], s[o + 1] >> Screen.BITS), 0);
            for (int k = 0; k < 3; k++) shares.slots[x + 2 + k] ^= s[o + XOK + k];
            if (!flags(s, o, flag)) continue;
            if (flag[MISMATCH_CAND] + flag[DIVERGENT_CAND] > 0) {
                if (nc + 4 > cand.length) cand = Arrays.copyOf(cand, cand.length * 2);
                cand[nc++] = s[o]; cand[nc++] = s[o + 1]; cand[nc++] = flag[MISMATCH_CAND]; cand[nc++] = flag[DIVERGENT_CAND];
            }
            boolean split = (s[o + HAS] & HAS_SPLIT) != 0;
            long send = s[o + SEND];
            SplitKey key = split ? new SplitKey(true, phase(send, starts, ends), s[o + DT], (int) s[o + PART],
                    Math.floorDiv(send, 1000)) : new SplitKey(false, 2 * starts.length, 0, 0, 0);
            long[] sums = out.splits.computeIfAbsent(key, k -> SplitKey.empty());
            for (int k = 0; k < flag.length; k++) sums[k] += flag[k];
            sums[COUNTED.length]++;
            if (flag[LOST] > 0) {
                sums[COUNTED.length + 1] = Math.min(sums[COUNTED.length + 1], send);
                sums[COUNTED.length + 2] = Math.max(sums[COUNTED.length + 2], send);
            }
            int kind = flag[LOST] > 0 ? 0 : flag[DUP_LOG] > 0 ? 1 : flag[DUP_DELIVERED] > 0 ? 2 : -1;
            if (kind >= 0) {
                keep(examples, new long[] {s[o], s[o + 1], kind, split ? send : Long.MIN_VALUE, split ? s[o + PART] : -1});
            }
        }
        out.examples = new long[examples.size() * EX_WIDTH];
        int ne = 0;
        for (long[] e : examples) {
            System.arraycopy(e, 0, out.examples, ne, EX_WIDTH);
            ne += EX_WIDTH;
        }
        out.candidates = Arrays.copyOf(cand, nc);
        out.shares = shares.states();
        return out;
    }

    /** An identity's flags (spark/identities.py names them); false when all are 0. */
    static boolean flags(long[] s, int o, int[] flag) {
        long packed = s[o + PACKED], has = s[o + HAS];
        long pn = packed & 0xFFFF, an = (packed >>> FIELD) & 0xFFFF, cn = (packed >>> 2 * FIELD) & 0xFFFF;
        long pKind = (has & HAS_PKIND) != 0 ? s[o + PKIND] : -1;
        boolean pOk = pn > 0 && pKind == P_OK;
        boolean hasA = (has & HAS_A) != 0, hasPPos = (has & HAS_PPOS) != 0;
        long aLo = s[o + ALO], aHi = s[o + AHI], cLo = s[o + CLO], cHi = s[o + CHI];
        boolean atAudit = hasPPos && hasA && (s[o + PPOS] == aLo || s[o + PPOS] == aHi);
        boolean cInA = hasA && (cLo == aLo || cLo == aHi) && (cHi == aLo || cHi == aHi);
        flag[LOST] = pOk && an == 0 ? 1 : 0;
        flag[UNSEEN] = pOk && cn == 0 ? 1 : 0;
        flag[FAILED_PRESENT] = pKind == P_FAIL && an > 0 ? 1 : 0;
        flag[INFO_PRESENT] = pKind == P_INFO && an > 0 ? 1 : 0;
        flag[DUP_LOG] = (int) Math.max(an - 1, 0);
        flag[DUP_DELIVERED] = (int) Math.max(cn - 1, 0);
        flag[PHANTOMS] = pn == 0 ? (int) an : 0;
        flag[MISMATCH] = pOk && an > 0 && an < 3 && !atAudit ? 1 : 0;
        flag[MISMATCH_CAND] = pOk && an >= 3 && !atAudit ? 1 : 0;
        flag[DIVERGENT_CAND] = cn > 0 && (an == 0 || an > 2 || cn > 2 || !cInA) ? 1 : 0;
        flag[PRODUCED_TWICE] = pn > 1 ? 1 : 0;
        flag[TOO_MANY] = s[o + ROWS] != pn + an + cn ? 1 : 0;
        for (int v : flag) if (v != 0) return true;
        return false;
    }

    /** 0 before the first fault, 2i+1 during fault i, 2i+2 after it (checker.phase_index). */
    static int phase(long send, long[] starts, long[] ends) {
        for (int i = 0; i < starts.length; i++) {
            if (send < starts[i]) return 2 * i;
            if (send < ends[i]) return 2 * i + 1;
        }
        return 2 * starts.length;
    }

    static long[] add(long[] x, long[] y) {
        long[] z = x.clone();
        int n = COUNTED.length;
        for (int k = 0; k <= n; k++) z[k] += y[k];
        z[n + 1] = Math.min(x[n + 1], y[n + 1]);
        z[n + 2] = Math.max(x[n + 2], y[n + 2]);
        return z;
    }

    /** Where anomalies are summed: the produced row's phase, DC and topic, partition and second
     *  (split false: no produced row, counted in the totals only). */
    record SplitKey(boolean split, int phase, long dt, int partition, long sec) implements java.io.Serializable {
        static long[] empty() {
            long[] z = new long[COUNTED.length + 3];
            z[COUNTED.length + 1] = Long.MAX_VALUE;
            z[COUNTED.length + 2] = Long.MIN_VALUE;
            return z;
        }

        void json(long[] sums, StringBuilder b) {
            int n = COUNTED.length;
            b.append("{\"phase\":").append(phase);
            b.append(",\"dt\":").append(split ? Long.toString(dt) : "null");
            b.append(",\"partition\":").append(split ? Integer.toString(partition) : "null");
            b.append(",\"send_sec\":").append(split ? Long.toString(sec) : "null");
            for (int k = 0; k < n; k++) b.append(",\"").append(COUNTED[k]).append("\":").append(sums[k]);
            b.append(",\"anomalous\":").append(sums[n]);
            boolean lost = sums[n + 1] != Long.MAX_VALUE;
            b.append(",\"lost_first_send_ms\":").append(lost ? Long.toString(sums[n + 1]) : "null");
            b.append(",\"lost_last_send_ms\":").append(lost ? Long.toString(sums[n + 2]) : "null").append("}\n");
        }
    }

    /** The suspicious buckets, as an open-addressing set with each bucket's mirror flag and the
     *  seqs to look at. */
    static final class BucketSet implements java.io.Serializable {
        static final int ABSENT = 0, OWN = 1, MIRROR = 2;
        final long[] keys, masks;
        final byte[] state;
        final int mask;

        BucketSet(long[] buckets, boolean[] mirror, long[] seqs) {
            int cap = Integer.highestOneBit(Math.max(16, buckets.length) * 2) * 2;
            keys = new long[cap];
            masks = new long[cap];
            state = new byte[cap];
            mask = cap - 1;
            for (int j = 0; j < buckets.length; j++) {
                int i = LongPairMap.mix(buckets[j], 0) & mask;
                while (state[i] != ABSENT) i = (i + 1) & mask;
                keys[i] = buckets[j];
                masks[i] = seqs[j];
                state[i] = (byte) (mirror[j] ? MIRROR : OWN);
            }
        }

        /** The bucket's slot, or -1. */
        int find(long bucket) {
            int i = LongPairMap.mix(bucket, 0) & mask;
            while (state[i] != ABSENT) {
                if (keys[i] == bucket) return i;
                i = (i + 1) & mask;
            }
            return -1;
        }
    }
}
