// SPDX-License-Identifier: Apache-2.0
package dcdrill;

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

    /** One task's bucket states, row by row; then one block of states per reduce partition. */
    static final class Fold {
        private final LongPairMap f = new LongPairMap(WIDTH, 1 << 14);
        private final long[] bad = new long[3];

        void bad(int kind) { bad[kind - P_BAD]++; }

        void add(InternalRow r, int kind) {
            long seq = r.getLong(Scan.SEQ);
            int o = f.at(r.getLong(Scan.IDH), seq >> BITS);
            long[] s = f.slots;
            long bit = 1L << (seq & 63);
            if (kind <= P_INFO && ((s[o + OK] | s[o + FAIL] | s[o + INFO]) & bit) != 0) s[o + P2] |= bit;
            switch (kind) {
                case P_OK:
                    s[o + OK] |= bit;
                    s[o + XOK] ^= okCertificate(!r.isNullAt(Scan.POS), r.getLong(Scan.POS));
                    break;
                case P_FAIL: s[o + FAIL] |= bit; break;
                case P_INFO: s[o + INFO] |= bit; break;
                case A_ROW:
                    s[o + A2] |= s[o + A] & bit; s[o + A] |= bit; s[o + NA]++; s[o + XA] ^= r.getLong(Scan.POS); break;
                default: s[o + C2] |= s[o + C] & bit; s[o + C] |= bit; s[o + NC]++; s[o + XC] ^= r.getLong(Scan.POS); break;
            }
        }

        List<Tuple2<Integer, long[]>> blocks(int partitions) { return f.blocks(partitions, bad); }
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
            for (int i = 3; i < blk.length; i += WIDTH) {
                int o = f.at(blk[i + IDH], blk[i + B]);
                long[] s = f.slots;
                // Seen twice: twice in either part, or once in each.
                s[o + P2] |= blk[i + P2] | ((s[o + OK] | s[o + FAIL] | s[o + INFO]) & (blk[i + OK] | blk[i + FAIL] | blk[i + INFO]));
                s[o + A2] |= blk[i + A2] | (s[o + A] & blk[i + A]);
                s[o + C2] |= blk[i + C2] | (s[o + C] & blk[i + C]);
                for (int k = OK; k <= C; k++) s[o + k] |= blk[i + k];
                for (int k = NA; k <= NC; k++) s[o + k] += blk[i + k];
                for (int k = XOK; k <= XC; k++) s[o + k] ^= blk[i + k];
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
