// SPDX-License-Identifier: Apache-2.0
package dcdrill;

import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.storage.StorageLevel;

import scala.Tuple2;

/**
 * The one scan of the ledgers (spark/identities.py explains what each fold decides). Each task
 * reads its narrowed rows once and keeps, in Spark's cache (memory first, then disk):
 *   - its rows packed into long arrays, which the identity pass reads back instead of the ledgers;
 *   - a summary, last: the screen's bucket states (one block per reduce partition), the producer
 *     pass's tables (produced rows) and reordering's segments (audit rows).
 * The first job that reads the cache (the screen) fills it; the others find it there. A cached
 * partition Spark had to drop is simply computed again, from the same rows.
 */
public final class Scan {
    /** Columns of the narrowed rows, by name: spark/identities.py narrow() selects them in this
     *  order, and run() refuses any other. A ledger leaves null what it does not fill. */
    public static final String[] COLUMNS = {"idh", "seq", "kind", "pos", "send_ms", "dt", "partition", "ack_ms",
        "tp", "dc", "topic", "g", "offset"};
    static final int IDH = 0, SEQ = 1, KIND = 2, POS = 3, SEND = 4, DT = 5, PART = 6, ACK = 7, TP = 8, DC = 9,
            TOPIC = 10, G = 11, OFFSET = 12;
    static {
        Names.check("Scan.COLUMNS", COLUMNS, "idh", IDH, "seq", SEQ, "kind", KIND, "pos", POS, "send_ms", SEND,
                "dt", DT, "partition", PART, "ack_ms", ACK, "tp", TP, "dc", DC, "topic", TOPIC, "g", G, "offset", OFFSET);
    }

    /** The rows' columns must be COLUMNS, by name and in order: positions are how the folds read them. */
    static void requireColumns(Dataset<Row> narrowed) {
        if (!Arrays.equals(narrowed.schema().fieldNames(), COLUMNS)) {
            throw new IllegalArgumentException("narrowed rows have columns " + Arrays.toString(narrowed.schema().fieldNames())
                    + ", the scan reads " + Arrays.toString(COLUMNS));
        }
    }
    // A packed row: idh, seq, meta (kind | has-position bit | partition << 32), position; produced
    // rows add send_ms and dt. Chunks just under 2 MB: with a 4 GB heap G1 stores each in a region
    // of its own, outside the young generation, so they are never copied.
    static final int META_POS = 1 << 8, CHUNK = (1 << 18) - 16;

    /** What a task keeps after its rows: the screen's blocks and the single-ledger tables. */
    static final class Summary implements java.io.Serializable {
        List<Tuple2<Integer, long[]>> blocks;
        ProducerPass.Tables tables;
        Map<Long, Reordering.Segment> segments;
    }

    private final JavaRDD<Object> kept;
    final int partitions;
    private final int wordMs;

    private Scan(JavaRDD<Object> kept, int partitions, int wordMs) {
        this.kept = kept;
        this.partitions = partitions;
        this.wordMs = wordMs;
    }

    /** A ledger's rows narrowed in SQL (spark/identities.py narrow_ledger), as run() reads them. */
    public static JavaRDD<InternalRow> narrowedRows(Dataset<Row> narrowed) {
        requireColumns(narrowed);
        return narrowed.queryExecution().toRdd().toJavaRDD();
    }

    /** rows: the three ledgers' narrowed rows (columns above; narrowedRows or Columnar.rows);
     *  faults: start and end of each (for the producer pass's phases); wordMs: the acknowledgement
     *  word. Nothing runs until screen(). */
    public static Scan run(JavaRDD<InternalRow> rows, int minPartitions, long[] starts, long[] ends, int wordMs) {
        int partitions = Screen.reducers(rows, minPartitions);
        JavaRDD<Object> kept = rows.mapPartitions(it -> new Task(it, partitions, starts, ends, wordMs))
                .persist(StorageLevel.MEMORY_AND_DISK());
        return new Scan(kept, partitions, wordMs);
    }

    /** The screen: reads every ledger (filling the cache), one shuffle of bucket states. */
    public Screen.Result screen() {
        return Screen.judgeAll(kept.mapPartitionsToPair(it -> summary(it).blocks.iterator()), partitions);
    }

    /** The producer pass's tables, as JSON lines (ProducerPass.merge). */
    public String producerTables() {
        return ProducerPass.merge(kept.mapPartitions(it -> List.of(summary(it).tables).iterator()).collect(), wordMs);
    }

    /** Reordered audit rows per partition hash, and the groups not in log order (Reordering.combine). */
    public Reordering.Result reordering() {
        return Reordering.combine(kept.mapPartitions(it -> List.of(summary(it).segments).iterator()).collect());
    }

    /** The packed rows, chunk by chunk (chunk[0]: longs used, the rows follow), streamed: a task's
     *  chunks can be far more than its heap (20M rows are ~1 GB), so they are never gathered. */
    JavaRDD<long[]> rows() {
        return kept.mapPartitions(Scan::chunksOf);  // static: the task must not capture this Scan
    }

    static Iterator<long[]> chunksOf(Iterator<Object> kept) {
        return new Chunks() {
            @Override long[] advance() {
                while (kept.hasNext()) {
                    if (kept.next() instanceof long[] c) return c;  // the summary, last, is skipped
                }
                return null;
            }
        };
    }

    /** Rows packed on the fly, not kept (the consumed ledger, when the identity pass needs it),
     *  chunk by chunk as they fill. */
    static JavaRDD<long[]> pack(Dataset<Row> narrowed) {
        return narrowed.queryExecution().toRdd().toJavaRDD().mapPartitions(it -> new Chunks() {
            private final Packer p = new Packer();

            @Override long[] advance() {
                while (p.chunk != null) {
                    if (!it.hasNext()) {
                        long[] last = p.last();
                        p.chunk = null;
                        return last;
                    }
                    InternalRow r = it.next();
                    long[] full = r.isNullAt(IDH) ? null : p.add(r, r.getByte(KIND));
                    if (full != null) return full;
                }
                return null;
            }
        });
    }

    /** Chunks found one at a time: advance() gives the next, or null at the end. */
    abstract static class Chunks implements Iterator<long[]> {
        private long[] next;

        abstract long[] advance();

        @Override public boolean hasNext() {
            if (next == null) next = advance();
            return next != null;
        }

        @Override public long[] next() {
            if (!hasNext()) throw new NoSuchElementException();
            long[] c = next;
            next = null;
            return c;
        }
    }

    public void release() { kept.unpersist(false); }

    static Summary summary(Iterator<Object> it) {
        Object last = null;
        while (it.hasNext()) last = it.next();
        return (Summary) last;
    }

    /** Appends packed rows to a chunk; hands back a chunk when the next row would not fit. */
    static final class Packer {
        long[] chunk = new long[CHUNK];
        int n = 1;

        long[] add(InternalRow r, int kind) {
            long[] full = null;
            if (n + 6 > chunk.length) {
                chunk[0] = n;
                full = chunk;
                chunk = new long[CHUNK];
                n = 1;
            }
            boolean pos = !r.isNullAt(POS);
            chunk[n++] = r.getLong(IDH);
            chunk[n++] = r.getLong(SEQ);
            chunk[n++] = kind | (pos ? META_POS : 0) | (kind <= Screen.P_INFO ? (long) r.getInt(PART) << 32 : 0);
            chunk[n++] = pos ? r.getLong(POS) : 0;
            if (kind <= Screen.P_INFO) {
                chunk[n++] = r.getLong(SEND);
                chunk[n++] = r.getLong(DT);
            }
            return full;
        }

        long[] last() {
            chunk[0] = n;
            return Arrays.copyOf(chunk, n);
        }
    }

    /** One task: its rows, folded and packed as they stream; full chunks first, the summary last. */
    static final class Task implements Iterator<Object> {
        private final Iterator<InternalRow> in;
        private final int partitions;
        private final Screen.Fold screen = new Screen.Fold();
        private final ProducerPass.Fold producer;
        private final Reordering.Fold reordering = new Reordering.Fold();
        private final Packer packer = new Packer();
        private Object next;
        private boolean done;

        Task(Iterator<InternalRow> in, int partitions, long[] starts, long[] ends, int wordMs) {
            this.in = in;
            this.partitions = partitions;
            this.producer = new ProducerPass.Fold(starts, ends, wordMs);
        }

        @Override public boolean hasNext() {
            while (next == null && !done) step();
            return next != null;
        }

        @Override public Object next() {
            if (!hasNext()) throw new NoSuchElementException();
            Object o = next;
            next = null;
            return o;
        }

        private void step() {
            while (in.hasNext()) {
                InternalRow r = in.next();
                int kind = r.getByte(KIND);
                if (r.isNullAt(IDH)) { screen.bad(kind); continue; }
                screen.add(r, kind);
                if (kind <= Screen.P_INFO) producer.add(r, kind);
                else if (kind == Screen.A_ROW && !r.isNullAt(SEQ)) reordering.add(r);
                if (kind == Screen.C_ROW) continue;  // read again only when needed (Identity.run)
                long[] full = packer.add(r, kind);
                if (full != null) { next = full; return; }
            }
            if (packer.chunk != null) {
                next = packer.last();
                packer.chunk = null;
                return;
            }
            Summary s = new Summary();
            s.blocks = screen.blocks(partitions);
            s.tables = producer.done();
            s.segments = reordering.done();
            next = s;
            done = true;
        }
    }
}
