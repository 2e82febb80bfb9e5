package dcdrill;

import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.execution.FileSourceScanExec;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

import scala.Tuple2;

/**
 * One side of a mirror flow (MirrorFold.SIDES) read from a plain Parquet ledger batch by batch
 * and packed as MirrorFold.pack packs narrowed rows, for the same fold. Spark's narrowing of the
 * same rows (spark/mirrors.py narrow_side, the reference) filters on strings and hashes every
 * row's producer id; here a string column's test and hash are taken once per dictionary entry
 * (BatchStrings), and no row is built. tests/spark/test_mirrors.py checks both give the same
 * counts.
 */
public final class MirrorBatches {
    private MirrorBatches() {}

    /** The side's rows of `plain` (the ledger as read, every column) as MirrorFold's packed
     *  chunks: rows whose `where` columns each hold one of the listed values (a null in a list
     *  lets a null through) and that have a producer id, a seq and a `ts`; `offset` and
     *  `partition` go with the rows of X and R. null when Spark does not plan a plain columnar
     *  scan of it (the caller then narrows in SQL). */
    public static JavaRDD<Tuple2<Integer, long[]>> side(Dataset<Row> plain, String side, String ts,
                                                        Map<String, List<String>> where, int partitions) {
        int s = Arrays.asList(MirrorFold.SIDES).indexOf(side);
        if (s < 0) throw new IllegalArgumentException("side " + side + " is none of " + Arrays.toString(MirrorFold.SIDES));
        boolean logged = s == MirrorFold.SOURCE || s == MirrorFold.TARGET;
        WhereTests filter = new WhereTests(where);
        String[] tests = filter.columns;
        // read: producer_id, seq, the time, the offset, the tests' columns, the partition (the
        // offset and partition only for X and R); names: the same without repeats, for the scan
        List<String> read = new java.util.ArrayList<>(List.of("producer_id", "seq", ts == null ? "seq" : ts,
                logged ? "offset" : "seq"));  // a consumed row has no time: its seq stands in
        read.addAll(Arrays.asList(tests));
        read.add(logged ? "partition" : "seq");
        String[] names = read.stream().distinct().toArray(String[]::new);
        Dataset<Row> picked = plain.select(names[0], Arrays.copyOfRange(names, 1, names.length));
        FileSourceScanExec scan = Columnar.plainScan(picked.queryExecution().executedPlan(), false);
        int[] at = scan == null ? null : Columnar.columns(scan, names);
        if (at == null) return null;
        int[] cols = read.stream().mapToInt(c -> at[Arrays.asList(names).indexOf(c)]).toArray();
        if (!logged) cols[cols.length - 1] = -1;
        return scan.executeColumnar().toJavaRDD()
                .mapPartitions(batches -> new Packer(batches, s, logged, cols, filter, partitions));
    }

    /** One task: its batches' rows of the side, tested, hashed and packed per reducer. */
    static final class Packer extends MirrorFold.Packing {
        private final Iterator<ColumnarBatch> batches;
        private final int side;
        private final boolean logged;
        private final int[] cols;  // producer_id, seq, ts, offset, the tests' columns, partition (-1: none)
        private final int[] tested;  // the tests' columns
        private final WhereTests.Bound tests;
        private final BatchStrings producers = new BatchStrings();

        Packer(Iterator<ColumnarBatch> batches, int side, boolean logged, int[] cols, WhereTests tests, int partitions) {
            super(partitions);
            this.batches = batches;
            this.side = side;
            this.logged = logged;
            this.cols = cols;
            this.tested = Arrays.copyOfRange(cols, 4, 4 + tests.columns.length);
            this.tests = tests.bound();
        }

        /** One batch's rows. */
        @Override boolean fill() {
            if (!batches.hasNext()) return false;
            ColumnarBatch b = batches.next();
            ColumnVector id = b.column(cols[0]), seq = b.column(cols[1]), ts = b.column(cols[2]), off = b.column(cols[3]);
            ColumnVector part = cols[cols.length - 1] < 0 ? null : b.column(cols[cols.length - 1]);
            producers.bind(id);
            tests.bind(b, tested);
            for (int r = 0, n = b.numRows(); r < n; r++) {
                if (id.isNullAt(r) || seq.isNullAt(r) || ts.isNullAt(r) || !tests.pass(r)) continue;
                add(producers.hash(r), seq.getLong(r), ts.getLong(r),
                        logged && !off.isNullAt(r) ? off.getLong(r) : MirrorFold.NONE, side,
                        part == null || part.isNullAt(r) ? -1 : part.getInt(r));
            }
            return true;
        }
    }
}
