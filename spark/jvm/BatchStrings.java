// SPDX-License-Identifier: Apache-2.0
package dcdrill;

import java.lang.reflect.Field;
import java.util.Arrays;

import org.apache.spark.sql.catalyst.expressions.XXH64;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * One string column of a Parquet column batch (Columnar.java): its values' hashes, texts and
 * (status) kinds, taken once per dictionary entry while the column chunk is dictionary-encoded.
 * Spark keeps a chunk's dictionary in a field it does not expose; a new dictionary object means
 * a new chunk, whose ids mean other values.
 */
final class BatchStrings {
    private static final Field DICTIONARY = dictionaryField();
    private static final long EMPTY = XXH64.hashUTF8String(UTF8String.EMPTY_UTF8, Columnar.SEED);
    private ColumnVector v;
    private WritableColumnVector ids;   // the dictionary ids, or null: values decoded already
    private Object dictionary;          // the dictionary the caches below belong to
    private long[] hashes = new long[0];
    private boolean[] hashed = new boolean[0];
    private UTF8String[] texts = new UTF8String[0];
    private byte[] kinds = new byte[0];  // status kind + 2 (none: 1); 0: not looked up yet
    private byte[] matches = new byte[0];  // in(): 2 yes, 1 no, 0 not looked up yet

    void bind(ColumnVector column) {
        v = column;
        ids = null;
        if (DICTIONARY != null && column instanceof WritableColumnVector w && w.hasDictionary()) {
            Object d;
            try {
                d = DICTIONARY.get(w);
            } catch (IllegalAccessException e) {
                return;
            }
            ids = w.getDictionaryIds();
            if (d != dictionary) {  // a new column chunk: a new dictionary
                dictionary = d;
                Arrays.fill(hashed, false);
                Arrays.fill(texts, null);
                Arrays.fill(kinds, (byte) 0);
                Arrays.fill(matches, (byte) 0);
            }
        }
    }

    private int id(int r) {
        int id = ids.getDictId(r);
        if (id >= hashed.length) {
            int size = Math.max(id + 1, 2 * hashed.length);
            hashes = Arrays.copyOf(hashes, size);
            hashed = Arrays.copyOf(hashed, size);
            texts = Arrays.copyOf(texts, size);
            kinds = Arrays.copyOf(kinds, size);
            matches = Arrays.copyOf(matches, size);
        }
        return id;
    }

    /** The value's dictionary id, -1 without a dictionary (ids change with the column chunk:
     *  bind() resets what was computed from them). */
    long key(int r) {
        return ids == null ? -1 : ids.getDictId(r);
    }

    /** Spark's xxhash64 of the value alone. */
    long hash(int r) {
        if (ids == null) return XXH64.hashUTF8String(v.getUTF8String(r), Columnar.SEED);
        int id = id(r);
        if (!hashed[id]) {
            hashes[id] = XXH64.hashUTF8String(v.getUTF8String(r), Columnar.SEED);
            hashed[id] = true;
        }
        return hashes[id];
    }

    /** The value's hash chained after `seed` (xxhash64(a, b) is b's hash seeded with a's). */
    long hashWithSeed(int r, long seed) {
        return XXH64.hashUTF8String(text(r), seed);
    }

    /** xxhash64(coalesce(value, '')). */
    long hashOrEmpty(int r) {
        return v.isNullAt(r) ? EMPTY : hash(r);
    }

    UTF8String text(int r) {
        if (ids == null) return v.getUTF8String(r);
        int id = id(r);
        if (texts[id] == null) texts[id] = v.getUTF8String(r).clone();
        return texts[id];
    }

    /** The produced row kind of a status; -1 for none of ok, fail, info. */
    int kind(int r) {
        if (ids == null) return statusKind(v.getUTF8String(r));
        int id = id(r);
        if (kinds[id] == 0) kinds[id] = (byte) (statusKind(v.getUTF8String(r)) + 2);
        return kinds[id] - 2;
    }

    /** Whether the value is one of `values` (always the same values for one column). */
    boolean in(int r, UTF8String[] values) {
        if (ids == null) return contains(values, v.getUTF8String(r));
        int id = id(r);
        if (matches[id] == 0) matches[id] = (byte) (contains(values, v.getUTF8String(r)) ? 2 : 1);
        return matches[id] == 2;
    }

    /** Whether the value passes `test` (always the same test for one column, and never in() too). */
    boolean matches(int r, java.util.function.Predicate<UTF8String> test) {
        if (ids == null) return test.test(v.getUTF8String(r));
        int id = id(r);
        if (matches[id] == 0) matches[id] = (byte) (test.test(v.getUTF8String(r)) ? 2 : 1);
        return matches[id] == 2;
    }

    private static boolean contains(UTF8String[] values, UTF8String s) {
        for (UTF8String value : values) if (value.equals(s)) return true;
        return false;
    }

    private static final UTF8String OK = UTF8String.fromString("ok"), FAIL = UTF8String.fromString("fail"),
            INFO = UTF8String.fromString("info");

    static int statusKind(UTF8String s) {
        if (s.equals(OK)) return Screen.P_OK;
        if (s.equals(FAIL)) return Screen.P_FAIL;
        if (s.equals(INFO)) return Screen.P_INFO;
        return -1;
    }

    private static Field dictionaryField() {
        try {
            Field f = WritableColumnVector.class.getDeclaredField("dictionary");
            f.setAccessible(true);
            return f;
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;  // no dictionary shortcut: every value is hashed
        }
    }
}
