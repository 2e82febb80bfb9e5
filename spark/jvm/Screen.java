// SPDX-License-Identifier: Apache-2.0
package dcdrill;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;

import org.apache.spark.HashPartitioner;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.XXH64;

import scala.Tuple2;

/**
 * The identity screen (spark/identities.py explains what it decides): the rows of the three
 * ledgers, folded per 64 consecutive seqs of a producer into bitmaps, row counts and XOR
 * certificates as the scan streams them (Scan.java); one shuffle brings a bucket's partial
 * states together, where it is judged clean or suspicious.
 */
public final class Screen {
    /** Row kinds by name: spark/identities.py looks a kind's number up here. Produced rows carry their
     *  status in the kind; a bad row (unparseable, or a required column missing) keeps its ledger's. */
    public static final String[] KINDS = {"produced_ok", "produced_fail", "produced_info", "audit", "consumed",
        "produced_bad", "audit_bad", "consumed_bad"};
    static final int P_OK = 0, P_FAIL = 1, P_INFO = 2, A_ROW = 3, C_ROW = 4, P_BAD = 5, A_BAD = 6, C_BAD = 7;
    static {
        Names.check("Screen.KINDS", KINDS, "produced_ok", P_OK, "produced_fail", P_FAIL, "produced_info", P_INFO,
                "audit", A_ROW, "consumed", C_ROW, "produced_bad", P_BAD, "audit_bad", A_BAD, "consumed_bad", C_BAD);
    }
    // A bucket's state: keys (idh, b); bitmaps: produced ok, fail, info, in the audit, consumed, and
    // seen twice or more in produced, audit, consumed; audit and consumed row counts; certificates
    // (XOR of positions) over the ok, audit and consumed rows.
    static final int IDH = 0, B = 1, OK = 2, FAIL = 3, INFO = 4, A = 5, C = 6, P2 = 7, A2 = 8, C2 = 9, NA = 10,
            NC = 11, XOK = 12, XA = 13, XC = 14, WIDTH = 15;
    static final int BITS = 6;
    static final long SEED = 42;  // Spark's xxhash64 seed: bucket keys match F.xxhash64(idh, b)

    /** What the screen hands back: the suspicious buckets, whether their consumed rows mirror the
     *  audit's, which of their seqs to look at (all: -1), their certificates (XOK, XA, XC per
     *  bucket; null: nothing to check, see Identity.run), and its totals (suspicious, unmirrored,
     *  bad rows of produced, audit, consumed). */
    public static final class Result implements java.io.Serializable {
        final long[] keys, masks, certs;
        final boolean[] mirror;
        private final long[] totals;

        Result(long[] keys, boolean[] mirror, long[] masks, long[] certs, long[] totals) {
            this.keys = keys;
            this.mirror = mirror;
            this.masks = masks;
            this.certs = certs;
            this.totals = totals;
        }

        public long[] totals() { return totals; }
    }

    /** Judges the tasks' blocks (Scan.screen): one shuffle, each bucket's states merged and judged. */
    static Result judgeAll(JavaPairRDD<Integer, long[]> blocks, int partitions) {
        List<long[]> judged = blocks.partitionBy(new HashPartitioner(partitions))
                .mapPartitions(it -> List.of(judge(it)).iterator()).collect();
        long[] totals = new long[5];
        for (long[] j : judged) for (int t = 0; t < 5; t++) totals[t] += j[t];
        long[] keys = new long[(int) totals[0]], masks = new long[keys.length], certs = new long[3 * keys.length];
        boolean[] mirror = new boolean[keys.length];
        int n = 0;
        for (long[] j : judged) {
            for (int i = 5; i < j.length; i += 6, n++) {
                keys[n] = j[i];
                mirror[n] = j[i + 1] != 0;
                masks[n] = j[i + 2];
                System.arraycopy(j, i + 3, certs, 3 * n, 3);
            }
        }
        return new Result(keys, mirror, masks, certs, totals);
    }

    /** Reduce tasks: at least the session's shuffle width, and as many as there are input tasks,
     *  so a reducer's share of the states stays the same as the record grows. */
    static int reducers(JavaRDD<InternalRow> rows, int minPartitions) {
        return Math.max(minPartitions, rows.getNumPartitions());
    }

    /** Spark's xxhash64(idh, b), b = seq >> 6: the key of the bucket the identity pass looks up. */
    static long bucketKey(long idh, long b) {
        return XXH64.hashLong(b, XXH64.hashLong(idh, SEED));
    }

    // A task's states are narrow, one map per ledger (a task reads one ledger's file, mostly): a
    // drill's log spreads a bucket's rows over every partition, so a task holds a state for most
    // buckets of the record, and each is shuffled. Produced: keys, ok, fail, info, seen twice, XOK;
    // audit and consumed: keys, the set, seen twice, rows, the certificate.
    static final int P_SET = 2, P_TWICE = 5, P_X = 6, P_WIDTH = 7, L_SET = 2, L_TWICE = 3, L_N = 4, L_X = 5,
            L_WIDTH = 6, HEADER = 6;  // a block: bad rows of the three ledgers, then its states per map

    /** One task's bucket states, row by row; then one block of states per reduce partition. */
    static final class Fold {
        private final LongPairMap produced = new LongPairMap(P_WIDTH, 1 << 12);
        private final LongPairMap audit = new LongPairMap(L_WIDTH, 1 << 12), consumed = new LongPairMap(L_WIDTH, 1 << 12);
        private final long[] bad = new long[3];

        void bad(int kind) { bad[kind - P_BAD]++; }

        void add(InternalRow r, int kind) {
            long seq = r.getLong(Scan.SEQ), idh = r.getLong(Scan.IDH), bit = 1L << (seq & 63);
            if (kind <= P_INFO) {
                int o = produced.at(idh, seq >> BITS);
                long[] s = produced.slots;
                if (((s[o + P_SET] | s[o + P_SET + 1] | s[o + P_SET + 2]) & bit) != 0) s[o + P_TWICE] |= bit;
                s[o + P_SET + kind] |= bit;  // P_OK, P_FAIL, P_INFO are 0, 1, 2
                if (kind == P_OK) s[o + P_X] ^= okCertificate(!r.isNullAt(Scan.POS), r.getLong(Scan.POS));
                return;
            }
            LongPairMap m = kind == A_ROW ? audit : consumed;
            int o = m.at(idh, seq >> BITS);
            long[] s = m.slots;
            s[o + L_TWICE] |= s[o + L_SET] & bit;
            s[o + L_SET] |= bit;
            s[o + L_N]++;
            s[o + L_X] ^= r.getLong(Scan.POS);
        }

        /** A block per reduce partition: HEADER longs (partition 0's: the bad rows; every block:
         *  how many states of each map follow), then the produced, audit and consumed states. */
        List<Tuple2<Integer, long[]>> blocks(int partitions) {
            LongPairMap[] maps = {produced, audit, consumed};
            List<List<Tuple2<Integer, long[]>>> parts = new ArrayList<>(3);
            for (LongPairMap f : maps) parts.add(f.blocks(partitions, new long[0]));
            List<Tuple2<Integer, long[]>> out = new ArrayList<>(partitions);
            for (int p = 0; p < partitions; p++) {
                int n = HEADER;
                for (List<Tuple2<Integer, long[]>> part : parts) n += part.get(p)._2().length;
                long[] block = new long[n];
                if (p == 0) System.arraycopy(bad, 0, block, 0, 3);
                n = HEADER;
                for (int m = 0; m < 3; m++) {
                    long[] states = parts.get(m).get(p)._2();
                    block[3 + m] = states.length / maps[m].width;
                    System.arraycopy(states, 0, block, n, states.length);
                    n += states.length;
                }
                out.add(new Tuple2<>(p, block));
            }
            return out;
        }
    }

    /** An acknowledged row's share of the ok certificate: its position, or 1 without one (which
     *  no audit row matches, so the bucket is looked at). */
    static long okCertificate(boolean hasPos, long pos) {
        return hasPos ? pos : 1L;
    }

    /** One reduce partition: merge the states of each bucket, keep the suspicious ones. */
    static long[] judge(Iterator<Tuple2<Integer, long[]>> it) {
        LongPairMap f = new LongPairMap(WIDTH, 1 << 14);
        long[] totals = new long[5];
        while (it.hasNext()) {
            long[] blk = it.next()._2();
            for (int t = 0; t < 3; t++) totals[2 + t] += blk[t];
            int i = HEADER;
            for (long n = blk[3]; n > 0; n--, i += P_WIDTH) {
                int o = f.at(blk[i], blk[i + 1]);
                long[] s = f.slots;
                // Seen twice: twice in either part, or once in each.
                long had = s[o + OK] | s[o + FAIL] | s[o + INFO];
                s[o + P2] |= blk[i + P_TWICE] | (had & (blk[i + P_SET] | blk[i + P_SET + 1] | blk[i + P_SET + 2]));
                s[o + OK] |= blk[i + P_SET];
                s[o + FAIL] |= blk[i + P_SET + 1];
                s[o + INFO] |= blk[i + P_SET + 2];
                s[o + XOK] ^= blk[i + P_X];
            }
            for (int ledger = 0; ledger < 2; ledger++) {
                int set = ledger == 0 ? A : C, twice = ledger == 0 ? A2 : C2, rows = ledger == 0 ? NA : NC;
                int cert = ledger == 0 ? XA : XC;
                for (long n = blk[4 + ledger]; n > 0; n--, i += L_WIDTH) {
                    int o = f.at(blk[i], blk[i + 1]);
                    long[] s = f.slots;
                    s[o + twice] |= blk[i + L_TWICE] | (s[o + set] & blk[i + L_SET]);
                    s[o + set] |= blk[i + L_SET];
                    s[o + rows] += blk[i + L_N];
                    s[o + cert] ^= blk[i + L_X];
                }
            }
        }
        long[] out = new long[5 + 6 * f.size];
        int n = 5;
        long[] s = f.slots;
        for (int i = 0; i < f.used.length; i++) {
            if (!f.used[i]) continue;
            int o = i * WIDTH;
            long ok = s[o + OK], a = s[o + A], c = s[o + C], twice = s[o + P2] | s[o + A2] | s[o + C2];
            boolean clean = twice == 0 && a == ok && c == ok && s[o + XOK] == s[o + XA] && s[o + XA] == s[o + XC];
            if (clean) continue;
            boolean mirror = c == a && s[o + NC] == s[o + NA] && s[o + XA] == s[o + XC];
            // The seqs with something to report by the sets alone. Every other seq of the bucket is
            // either in no ledger but produced (not ok), or in ok, audit and consumed once each: its
            // positions are what the certificates check once the flagged seqs' share is taken out
            // (Identity.run). Without flagged seqs, only the certificates differ: look at them all.
            long flagged = (ok ^ a) | (ok & ~c) | (c & ~a) | twice;
            totals[0]++;
            if (!mirror) totals[1]++;
            out[n++] = bucketKey(s[o + IDH], s[o + B]);
            out[n++] = mirror ? 1 : 0;
            out[n++] = flagged == 0 ? -1L : flagged;
            out[n++] = s[o + XOK];
            out[n++] = s[o + XA];
            out[n++] = s[o + XC];
        }
        System.arraycopy(totals, 0, out, 0, 5);
        return Arrays.copyOf(out, n);
    }
}
