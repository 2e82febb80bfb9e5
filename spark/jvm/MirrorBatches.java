// SPDX-License-Identifier: Apache-2.0
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
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.util.CollectionAccumulator;

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
    public static JavaRDD<Tuple2<Integer, int[]>> side(Dataset<Row> plain, String side, String ts,
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

    /** The failed-over group's rows of a plain consumed ledger, read once as the fold's two
     *  consumed sides: `before` (its rows whose cluster is one of these; a null lets a null
     *  through) and `after` (on the copy's cluster). The read also finds how far the group got
     *  in R after the failover, per partition, handed back when the read is done (reached()).
     *  null when Spark does not plan a plain columnar scan of it. */
    public static Consumed consumed(Dataset<Row> plain, String group, List<String> before, List<String> after,
                                    int partitions) {
        String[] names = {"producer_id", "seq", "group", "cluster", "partition", "offset"};
        Dataset<Row> picked = plain.select(names[0], Arrays.copyOfRange(names, 1, names.length));
        FileSourceScanExec scan = Columnar.plainScan(picked.queryExecution().executedPlan(), false);
        int[] cols = scan == null ? null : Columnar.columns(scan, names);
        if (cols == null) return null;
        WhereTests sideBefore = new WhereTests(where(group, before)), sideAfter = new WhereTests(where(group, after));
        CollectionAccumulator<long[]> reach = scan.session().sparkContext().collectionAccumulator("mirror fold reach");
        JavaRDD<Tuple2<Integer, int[]>> chunks = scan.executeColumnar().toJavaRDD()
                .mapPartitions(batches -> new ConsumedPacker(batches, cols, sideBefore, sideAfter, reach, partitions));
        return new Consumed(chunks, reach);
    }

    private static Map<String, List<String>> where(String group, List<String> clusters) {
        Map<String, List<String>> where = new java.util.LinkedHashMap<>();
        where.put("group", List.of(group));
        where.put("cluster", clusters);
        return where;
    }

    /** consumed()'s chunks, and how far the group got in R once they have all been read. */
    public static final class Consumed {
        private final JavaRDD<Tuple2<Integer, int[]>> chunks;
        private final CollectionAccumulator<long[]> reach;

        Consumed(JavaRDD<Tuple2<Integer, int[]>> chunks, CollectionAccumulator<long[]> reach) {
            this.chunks = chunks;
            this.reach = reach;
        }

        public JavaRDD<Tuple2<Integer, int[]>> chunks() { return chunks; }

        /** The highest offset per partition of the rows after the failover, from every task that
         *  read (a task run twice gives the same maxima). */
        Map<Integer, Long> reached() {
            Map<Integer, Long> out = new java.util.HashMap<>();
            for (long[] task : reach.value()) {
                for (int i = 0; i < task.length; i += 2) out.merge((int) task[i], task[i + 1], Math::max);
            }
            return out;
        }
    }

    /** One task of consumed(): each row of the group is a side before or after, or neither. */
    static final class ConsumedPacker extends MirrorFold.Packing {
        private final Iterator<ColumnarBatch> batches;
        private final int[] cols;  // producer_id, seq, group, cluster, partition, offset
        private final WhereTests.Bound before, after;
        private final CollectionAccumulator<long[]> reach;
        private final Map<Integer, Long> reached = new java.util.HashMap<>();
        private final BatchStrings producers = new BatchStrings();

        ConsumedPacker(Iterator<ColumnarBatch> batches, int[] cols, WhereTests before, WhereTests after,
                       CollectionAccumulator<long[]> reach, int partitions) {
            super(partitions);
            this.batches = batches;
            this.cols = cols;
            this.before = before.bound();
            this.after = after.bound();
            this.reach = reach;
        }

        @Override boolean fill() {
            if (!batches.hasNext()) {
                long[] found = new long[2 * reached.size()];
                int i = 0;
                for (Map.Entry<Integer, Long> e : reached.entrySet()) {
                    found[i++] = e.getKey();
                    found[i++] = e.getValue();
                }
                reach.add(found);
                return false;
            }
            ColumnarBatch b = batches.next();
            ColumnVector id = b.column(cols[0]), seq = b.column(cols[1]), part = b.column(cols[4]), off = b.column(cols[5]);
            int[] tested = {cols[2], cols[3]};
            producers.bind(id);
            before.bind(b, tested);
            after.bind(b, tested);
            for (int r = 0, n = b.numRows(); r < n; r++) {
                if (id.isNullAt(r)) continue;
                int side;
                if (before.pass(r)) side = MirrorFold.BEFORE;
                else if (after.pass(r)) {  // the reach counts every row with an identity, as the SQL reach does
                    side = MirrorFold.AFTER;
                    if (!part.isNullAt(r) && !off.isNullAt(r)) reached.merge(part.getInt(r), off.getLong(r), Math::max);
                } else continue;
                if (!seq.isNullAt(r)) add(producers.hash(r), seq.getLong(r), 0, MirrorFold.NONE, side, -1);
            }
            return true;
        }
    }

    /** spark/mirrors.py mirror_loops on a plain audit ledger, batch by batch: per task, {index,
     *  rows}, the rows with an identity that started in `cluster` and sit in a copy there, by the
     *  copy's name (`<cluster>.…` or `….<cluster>.…`) or by their origin header (any topic but
     *  the drill topic `topic`). `plain` may carry that test as a filter, for the row groups
     *  Parquet can skip (usually all of them); each row read is tested here. `index` tells the
     *  clusters apart in a union of several. null when Spark does not plan a plain columnar
     *  scan of it. */
    public static JavaRDD<long[]> loops(Dataset<Row> plain, int index, String cluster, String topic) {
        boolean origins = Arrays.asList(plain.columns()).contains("origin");
        String[] names = origins ? new String[] {"producer_id", "topic", "origin"} : new String[] {"producer_id", "topic"};
        Dataset<Row> picked = plain.select(names[0], Arrays.copyOfRange(names, 1, names.length));
        FileSourceScanExec scan = Columnar.plainScan(picked.queryExecution().executedPlan(), true);
        int[] cols = scan == null ? null : Columnar.columns(scan, names);
        if (cols == null) return null;
        String prefix = cluster + ".", infix = "." + cluster + ".";
        return scan.executeColumnar().toJavaRDD().mapPartitions(batches -> {
            UTF8String drill = topic == null ? null : UTF8String.fromString(topic), home = UTF8String.fromString(cluster);
            java.util.function.Predicate<UTF8String> named = t -> t.toString().startsWith(prefix) || t.toString().contains(infix),
                    isHome = home::equals, notDrill = v -> !v.equals(drill);
            BatchStrings topics = new BatchStrings(), others = new BatchStrings(), from = new BatchStrings();
            long found = 0;
            while (batches.hasNext()) {
                ColumnarBatch b = batches.next();
                ColumnVector id = b.column(cols[0]), t = b.column(cols[1]), origin = origins ? b.column(cols[2]) : null;
                topics.bind(t);
                others.bind(t);
                if (origins) from.bind(origin);
                for (int r = 0, n = b.numRows(); r < n; r++) {
                    if (id.isNullAt(r) || t.isNullAt(r)) continue;
                    if (topics.matches(r, named) || origins && drill != null && !origin.isNullAt(r)
                            && from.matches(r, isHome) && others.matches(r, notDrill)) found++;
                }
            }
            return List.of(new long[] {index, found}).iterator();
        });
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
