// SPDX-License-Identifier: Apache-2.0
package dcdrill;

import java.util.List;
import java.util.Map;

import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A filter on string columns read batch by batch: each column's value one of its listed values,
 * a null in a list letting a null through (spark/mirrors.py's sides, spark/ledgers.py's rows of
 * one cluster). Each test is answered once per Parquet dictionary entry (BatchStrings). A task
 * takes its own bound copy.
 */
final class WhereTests implements java.io.Serializable {
    final String[] columns;
    private final UTF8String[][] allowed;
    private final boolean[] nulls;

    WhereTests(Map<String, List<String>> where) {
        columns = where.keySet().toArray(new String[0]);
        allowed = new UTF8String[columns.length][];
        nulls = new boolean[columns.length];
        for (int i = 0; i < columns.length; i++) {
            List<String> values = where.get(columns[i]);
            allowed[i] = values.stream().filter(v -> v != null).map(UTF8String::fromString).toArray(UTF8String[]::new);
            nulls[i] = values.stream().anyMatch(v -> v == null);  // List.of(...).contains(null) throws
        }
    }

    Bound bound() { return new Bound(); }

    /** One task's tests, bound to a batch's columns in turn. */
    final class Bound {
        private final BatchStrings[] tested = new BatchStrings[allowed.length];
        private final ColumnVector[] test = new ColumnVector[allowed.length];

        Bound() {
            for (int i = 0; i < tested.length; i++) tested[i] = new BatchStrings();
        }

        /** The tests' columns, in `columns`' order, are at[0], at[1], ... of the batch. */
        void bind(ColumnarBatch b, int[] at) {
            for (int i = 0; i < tested.length; i++) tested[i].bind(test[i] = b.column(at[i]));
        }

        boolean pass(int r) {
            for (int i = 0; i < test.length; i++) {
                if (test[i].isNullAt(r) ? !nulls[i] : !tested[i].in(r, allowed[i])) return false;
            }
            return true;
        }
    }
}
