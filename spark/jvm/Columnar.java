// SPDX-License-Identifier: Apache-2.0
package dcdrill;

import java.io.IOException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.hadoop.Footer;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.SpecificInternalRow;
import org.apache.spark.sql.catalyst.expressions.XXH64;
import org.apache.spark.sql.execution.ColumnarToRowExec;
import org.apache.spark.sql.execution.FileSourceScanExec;
import org.apache.spark.sql.execution.FilterExec;
import org.apache.spark.sql.execution.InputAdapter;
import org.apache.spark.sql.execution.ProjectExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.WholeStageCodegenExec;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat$;
import org.apache.spark.sql.execution.datasources.parquet.ParquetToSparkSchemaConverter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * The scan's narrowing (spark/identities.py narrow_ledger) done on Parquet's column batches, for
 * ledgers read as they are (no cast, no filter). Spark's own narrowing is a generated projection
 * that hashes every row's producer id and topic and copies each row into an UnsafeRow; here a
 * string's hash is taken once per Parquet dictionary entry, and each row is handed to the scan's
 * folds in one reused row. A 10M-record scan: see docs/benchmarks.md. The SQL narrowing stays the
 * reference (every other ledger goes through it); tests/spark/test_columnar.py checks that both
 * give the same verdict, counts and tables, bad rows included.
 */
public final class Columnar {
    /** The columns each ledger's rows are read with, by name (RECORD.md's; the rest are not needed). */
    public static final String[] PRODUCED = {"producer_id", "seq", "topic", "partition", "send_ms", "status", "ack_ms",
        "offset", "dc"};
    public static final String[] LOGGED = {"topic", "partition", "offset", "producer_id", "seq"};  // audit, consumed

    static final long SEED = 42;  // Spark's xxhash64 seed
    private static final StructType NARROWED = narrowedSchema();

    private Columnar() {}

    /** One ledger's narrowed rows, read batch by batch; null when Spark does not plan `ledger` as a
     *  plain columnar Parquet scan (the caller then narrows in SQL). ledger: produced, audit or
     *  consumed; `rows` must select that ledger's columns above, with RECORD.md's types. */
    public static JavaRDD<InternalRow> rows(Dataset<Row> rows, String ledger) {
        return rows(rows, ledger, Map.of());
    }

    /** The same for the rows that pass `where` (WhereTests; a replicated record's rows of the home
     *  cluster: {"cluster": [null, home]}), whose columns `rows` selects after the ledger's. */
    public static JavaRDD<InternalRow> rows(Dataset<Row> rows, String ledger, Map<String, List<String>> where) {
        FileSourceScanExec scan = plainScan(rows.queryExecution().executedPlan(), false);
        int[] at = scan == null ? null : columns(scan, ledger.equals("produced") ? PRODUCED : LOGGED);
        if (at == null) return null;
        WhereTests filter = new WhereTests(where);
        int[] tested = columns(scan, filter.columns);
        if (tested == null) return null;
        int kind = switch (ledger) {
            case "produced" -> Screen.P_OK;
            case "audit" -> Screen.A_ROW;
            case "consumed" -> Screen.C_ROW;
            default -> throw new IllegalArgumentException("ledger " + ledger + " is none of produced, audit, consumed");
        };
        return scan.executeColumnar().toJavaRDD()
                .mapPartitions(batches -> new Rows(batches, kind, at, filter.columns.length == 0 ? null : filter.bound(), tested));
    }

    /** The rows of a plain produced or audit ledger that hold one of the identities (idhs[i],
     *  seqs[i]) and pass `where` (WhereTests, as rows() takes it; its columns selected after the
     *  ledger's), as JSON lines {idh, seq, producer_id, topic, partition, offset, ledger}, one
     *  string per task: what the report names its examples with (spark/checker.py examples). Lazy;
     *  null when the ledger is not plain. */
    public static JavaRDD<String> find(Dataset<Row> rows, String ledger, byte[] identities,
                                       Map<String, List<String>> where) {
        // (idh, seq) pairs as big-endian longs: one py4j call, where filling two long arrays took
        // two per identity (about 0.2 s for 100 while the driver's other thread held Python's lock)
        java.nio.LongBuffer pairs = java.nio.ByteBuffer.wrap(identities).asLongBuffer();
        long[] idhs = new long[pairs.remaining() / 2], seqs = new long[idhs.length];
        for (int i = 0; i < idhs.length; i++) {
            idhs[i] = pairs.get();
            seqs[i] = pairs.get();
        }
        return find(rows, ledger, idhs, seqs, where);
    }

    static JavaRDD<String> find(Dataset<Row> rows, String ledger, long[] idhs, long[] seqs,
                                Map<String, List<String>> where) {
        FileSourceScanExec scan = plainScan(rows.queryExecution().executedPlan(), true);
        boolean produced = ledger.equals("produced");
        int[] at = scan == null ? null : columns(scan, produced ? PRODUCED : LOGGED);
        WhereTests filter = new WhereTests(where);
        int[] tested = scan == null ? null : columns(scan, filter.columns);
        if (at == null || tested == null) return null;
        // producer_id, seq, topic, partition, offset, by their place in PRODUCED or LOGGED
        int[] pick = produced ? new int[] {at[0], at[1], at[2], at[3], at[7]} : new int[] {at[3], at[4], at[0], at[1], at[2]};
        return scan.executeColumnar().toJavaRDD().mapPartitions(batches -> List.of(
                Finder.find(batches, ledger, pick, idhs, seqs, filter.bound(), tested)).iterator());
    }

    /** Where each of `wanted` sits among the scan's columns, or null when one is missing or not of
     *  RECORD.md's type. */
    static int[] columns(FileSourceScanExec scan, String[] wanted) {
        int[] at = new int[wanted.length];
        scala.collection.Iterator<Attribute> out = scan.output().iterator();
        Map<String, Integer> index = new HashMap<>();
        Map<String, DataType> types = new HashMap<>();
        for (int i = 0; out.hasNext(); i++) {
            Attribute a = out.next();
            index.put(a.name(), i);
            types.put(a.name(), a.dataType());
        }
        for (int i = 0; i < wanted.length; i++) {
            Integer col = index.get(wanted[i]);
            if (col == null || !types.get(wanted[i]).equals(type(wanted[i]))) return null;
            at[i] = col;
        }
        return at;
    }

    /** A Parquet file's schema as Spark's reader infers it (ParquetFileFormat.readSchemaFromFooter),
     *  as JSON, from its footer read here on the driver: Spark's own inference runs a job for it,
     *  about 0.4 s of a verify's three ledgers. */
    public static String footerSchema(SparkSession spark, String file) throws IOException {
        Configuration conf = spark.sessionState().newHadoopConf();
        Path path = new Path(file);
        try (ParquetFileReader reader = ParquetFileReader.open(HadoopInputFile.fromPath(path, conf))) {
            ParquetToSparkSchemaConverter converter = new ParquetToSparkSchemaConverter(spark.sessionState().conf());
            return ParquetFileFormat$.MODULE$.readSchemaFromFooter(new Footer(path, reader.getFooter()), converter).json();
        }
    }

    /** The file scan under `plan` when nothing but columnar-to-row plumbing and plain column picks
     *  sit above it: then its batches are the ledger's rows. `pruning`: filters are allowed too,
     *  for the row groups their pushed-down bounds let Parquet skip; the batches then still hold
     *  every row of the groups read, which the caller must check itself (find does). */
    static FileSourceScanExec plainScan(SparkPlan plan, boolean pruning) {
        while (true) {
            if (plan instanceof FileSourceScanExec s) {
                return s.supportsColumnar() && s.partitionFilters().isEmpty()
                        && (pruning || s.dataFilters().isEmpty()) ? s : null;
            } else if (plan instanceof WholeStageCodegenExec w) {
                plan = w.child();
            } else if (plan instanceof ColumnarToRowExec c) {
                plan = c.child();
            } else if (plan instanceof InputAdapter a) {
                plan = a.child();
            } else if (plan instanceof ProjectExec p && onlyColumns(p)) {
                plan = p.child();
            } else if (pruning && plan instanceof FilterExec f) {
                plan = f.child();
            } else {
                return null;
            }
        }
    }

    private static boolean onlyColumns(ProjectExec p) {
        scala.collection.Iterator<NamedExpression> it = p.projectList().iterator();
        while (it.hasNext()) if (!(it.next() instanceof AttributeReference)) return false;
        return true;
    }

    /** RECORD.md's type of a column read here. */
    static DataType type(String column) {
        return switch (column) {
            case "partition" -> DataTypes.IntegerType;
            case "producer_id", "topic", "status", "dc", "group", "cluster", "origin" -> DataTypes.StringType;
            default -> DataTypes.LongType;
        };
    }

    private static StructType narrowedSchema() {
        StructField[] fields = new StructField[Scan.COLUMNS.length];
        for (int i = 0; i < fields.length; i++) {
            fields[i] = DataTypes.createStructField(Scan.COLUMNS[i], switch (i) {
                case Scan.KIND -> DataTypes.ByteType;
                case Scan.PART -> DataTypes.IntegerType;
                case Scan.DC, Scan.TOPIC -> DataTypes.StringType;
                default -> DataTypes.LongType;
            }, true);
        }
        return new StructType(fields);
    }

    /** A batch's rows, narrowed one at a time into one reused row (the scan's folds read each row
     *  before asking for the next). */
    static final class Rows implements Iterator<InternalRow> {
        private final Iterator<ColumnarBatch> batches;
        private final int ledger;
        private final int[] at;
        private final SpecificInternalRow row = new SpecificInternalRow(NARROWED);
        private final BatchStrings producers = new BatchStrings(), topics = new BatchStrings(), statuses = new BatchStrings(),
                dcs = new BatchStrings();
        private ColumnVector c0, c1, c2, c3, c4, c5, c6, c7, c8;
        private int i, n;
        private final WhereTests.Bound where;  // null: every row
        private final int[] tested;

        Rows(Iterator<ColumnarBatch> batches, int ledger, int[] at, WhereTests.Bound where, int[] tested) {
            this.batches = batches;
            this.ledger = ledger;
            this.at = at;
            this.where = where;
            this.tested = tested;
        }

        @Override public boolean hasNext() {
            while (true) {
                while (i >= n) {
                    if (!batches.hasNext()) return false;
                    ColumnarBatch b = batches.next();
                    n = b.numRows();
                    i = 0;
                    ColumnVector[] v = new ColumnVector[at.length];
                    for (int k = 0; k < at.length; k++) v[k] = b.column(at[k]);
                    if (ledger == Screen.P_OK) {
                        c0 = v[0]; c1 = v[1]; c2 = v[2]; c3 = v[3]; c4 = v[4]; c5 = v[5]; c6 = v[6]; c7 = v[7]; c8 = v[8];
                        producers.bind(c0); topics.bind(c2); statuses.bind(c5); dcs.bind(c8);
                        lastDc = lastTopic = -2;  // ids of another chunk may mean other values
                    } else {
                        c0 = v[0]; c1 = v[1]; c2 = v[2]; c3 = v[3]; c4 = v[4];
                        topics.bind(c0); producers.bind(c3);
                    }
                    if (where != null) where.bind(b, tested);
                }
                if (where == null || where.pass(i)) return true;
                i++;  // a row the filter leaves out
            }
        }

        @Override public InternalRow next() {
            if (!hasNext()) throw new NoSuchElementException();
            int r = i++;
            if (ledger == Screen.P_OK) produced(r);
            else logged(r);
            return row;
        }

        /** narrow_ledger's produced rows: bad_row_sql("produced"), then the kind from the status and
         *  the hashes (the position only where ok promised an offset). */
        private void produced(int r) {
            // PRODUCED: producer_id 0, seq 1, topic 2, partition 3, send_ms 4, status 5, ack_ms 6, offset 7, dc 8
            if (c0.isNullAt(r) || c1.isNullAt(r) || c2.isNullAt(r) || c3.isNullAt(r) || c4.isNullAt(r) || c5.isNullAt(r)) {
                bad(Screen.P_BAD);
                return;
            }
            long seq = c1.getLong(r), send = c4.getLong(r);
            int partition = c3.getInt(r);
            boolean hasAck = !c6.isNullAt(r), hasOffset = !c7.isNullAt(r);
            long ack = hasAck ? c6.getLong(r) : 0, offset = hasOffset ? c7.getLong(r) : 0;
            int kind = statuses.kind(r);
            if (seq < 0 || partition < 0 || send < 0 || ack < 0 || offset < 0 || kind < 0
                    || (kind == Screen.P_OK) != hasOffset) {
                bad(Screen.P_BAD);
                return;
            }
            long topic = topics.hash(r), tp = XXH64.hashInt(partition, topic);
            row.setLong(Scan.IDH, producers.hash(r));
            row.setLong(Scan.SEQ, seq);
            row.setByte(Scan.KIND, (byte) kind);
            if (kind == Screen.P_OK) row.setLong(Scan.POS, XXH64.hashLong(seq, XXH64.hashLong(offset, tp)));
            else row.setNullAt(Scan.POS);
            row.setLong(Scan.SEND, send);
            row.setLong(Scan.DT, dt(r));
            row.setInt(Scan.PART, partition);
            if (hasAck) row.setLong(Scan.ACK, ack);
            else row.setNullAt(Scan.ACK);
            row.setLong(Scan.TP, tp);
            if (c8.isNullAt(r)) row.setNullAt(Scan.DC);
            else row.update(Scan.DC, dcs.text(r));
            row.update(Scan.TOPIC, topics.text(r));
        }

        /** narrow_ledger's audit and consumed rows: a producer id and a seq are optional there (a
         *  null producer id hashes to Spark's seed, as xxhash64(NULL) does). */
        private void logged(int r) {
            // LOGGED: topic 0, partition 1, offset 2, producer_id 3, seq 4
            if (c0.isNullAt(r) || c1.isNullAt(r) || c2.isNullAt(r)) {
                bad(ledger == Screen.A_ROW ? Screen.A_BAD : Screen.C_BAD);
                return;
            }
            int partition = c1.getInt(r);
            long offset = c2.getLong(r);
            boolean hasSeq = !c4.isNullAt(r), hasProducer = !c3.isNullAt(r);
            long seq = hasSeq ? c4.getLong(r) : 0;
            if (partition < 0 || offset < 0 || seq < 0) {
                bad(ledger == Screen.A_ROW ? Screen.A_BAD : Screen.C_BAD);
                return;
            }
            long tp = XXH64.hashInt(partition, topics.hash(r)), pos = XXH64.hashLong(offset, tp);
            row.setLong(Scan.IDH, hasProducer ? producers.hash(r) : SEED);
            if (hasSeq) {
                row.setLong(Scan.SEQ, seq);
                pos = XXH64.hashLong(seq, pos);
            } else {
                row.setNullAt(Scan.SEQ);
            }
            row.setByte(Scan.KIND, (byte) ledger);
            row.setLong(Scan.POS, pos);
            if (ledger == Screen.A_ROW) {
                row.setLong(Scan.TP, tp);
                row.setLong(Scan.G, hasProducer ? XXH64.hashUTF8String(c3.getUTF8String(r), tp) : tp);
                row.setLong(Scan.OFFSET, offset);
            }
        }

        private long lastDc = -2, lastTopic = -2, lastDt;  // dictionary ids (-1: no dictionary)

        /** xxhash64(coalesce(dc, ''), topic), for a run of rows of one DC and topic taken once. */
        private long dt(int r) {
            long dc = c8.isNullAt(r) ? -3 : dcs.key(r), topic = topics.key(r);
            if (dc != lastDc || topic != lastTopic || dc == -1 || topic == -1) {
                lastDt = topics.hashWithSeed(r, dcs.hashOrEmpty(r));
                lastDc = dc;
                lastTopic = topic;
            }
            return lastDt;
        }

        private void bad(int kind) {
            row.setNullAt(Scan.IDH);
            row.setLong(Scan.SEQ, kind);
            row.setByte(Scan.KIND, (byte) kind);
        }
    }

    /** One task of find(): a row's seq is looked up first, its producer id hashed only then. */
    static final class Finder {
        static String find(Iterator<ColumnarBatch> batches, String ledger, int[] pick, long[] idhs, long[] seqs,
                           WhereTests.Bound tests, int[] tested) {
            LongPairMap wanted = new LongPairMap(2, idhs.length);
            for (int i = 0; i < idhs.length; i++) wanted.at(idhs[i], seqs[i]);
            long[] sorted = Arrays.stream(seqs).distinct().sorted().toArray();
            BatchStrings producers = new BatchStrings(), topics = new BatchStrings();
            StringBuilder out = new StringBuilder();
            while (batches.hasNext()) {
                ColumnarBatch b = batches.next();
                ColumnVector producer = b.column(pick[0]), seq = b.column(pick[1]), topic = b.column(pick[2]),
                        partition = b.column(pick[3]), offset = b.column(pick[4]);
                producers.bind(producer);
                topics.bind(topic);
                tests.bind(b, tested);
                for (int r = 0, n = b.numRows(); r < n; r++) {
                    if (seq.isNullAt(r) || Arrays.binarySearch(sorted, seq.getLong(r)) < 0 || producer.isNullAt(r)
                            || !tests.pass(r)) continue;
                    long idh = producers.hash(r), s = seq.getLong(r);
                    if (wanted.find(idh, s) < 0) continue;
                    out.append("{\"idh\":").append(idh).append(",\"seq\":").append(s)
                       .append(",\"producer_id\":").append(ProducerPass.quote(producers.text(r).toString()))
                       .append(",\"topic\":").append(topic.isNullAt(r) ? "null" : ProducerPass.quote(topics.text(r).toString()))
                       .append(",\"partition\":").append(partition.isNullAt(r) ? "null" : String.valueOf(partition.getInt(r)))
                       .append(",\"offset\":").append(offset.isNullAt(r) ? "null" : String.valueOf(offset.getLong(r)))
                       .append(",\"ledger\":\"").append(ledger).append("\"}\n");
                }
            }
            return out.toString();
        }
    }
}
